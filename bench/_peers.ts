/**
 * The gateways people put in front of MCP servers, started as their READMEs say, each named by the
 * mode it runs in, for `bench/peers_bench.ts`. All of them are pinned devDependencies run under
 * the machine's Node, listen on (or talk to) loopback only, and keep their state in a temporary
 * HOME. `mcp-hub` would fetch its marketplace catalogue from the internet on start: the bench
 * gives it a fresh cached catalogue and a PATH without `curl`, so it makes no request outside
 * loopback.
 */
import { join } from "node:path";
import { Client } from "../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../packages/pml/src/sdk/http_client.ts";
import { StdioClientTransport } from "../packages/pml/src/sdk/stdio_client.ts";
import type { Transport } from "../packages/pml/src/sdk/transport.ts";
// The SDK's "./*" export maps types to "*.js.d.ts", which Deno cannot resolve; name the real file.
// @ts-types="../node_modules/@modelcontextprotocol/sdk/dist/esm/client/sse.d.ts"
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { freePort } from "../tests/e2e/_cloud.ts";

export const ROOT = join(import.meta.dirname!, "..");
const BIN = (pkg: string, file: string) => join(ROOT, "node_modules", pkg, file);
let node: string | undefined;
const homes: string[] = [];

/** The node binary's path (the peers run under the machine's Node, as `npx` would run them). */
export function nodePath(): string {
  node ??= new TextDecoder().decode(
    new Deno.Command("sh", { args: ["-c", "command -v node"] }).outputSync().stdout,
  ).trim();
  return node;
}

/** Removes the temporary HOMEs the peers were given. */
export function removePeerHomes(): void {
  for (const home of homes.splice(0)) Deno.removeSync(home, { recursive: true });
}

/** A gateway (or a server called directly) with an SDK client connected to it. */
export interface Running {
  readonly client: Client;
  /** The process whose tree is the gateway (and what it spawned), for CPU and RSS. */
  readonly pid?: number;
  close(): Promise<void>;
}

/** A stdio command as an MCP client starts it. */
export interface StdioCommand {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Record<string, string>;
  readonly cwd?: string;
}

/** Connects an SDK client to a stdio command. */
export async function overStdio(cmd: StdioCommand): Promise<Running> {
  const transport = new StdioClientTransport({
    command: cmd.command,
    args: [...cmd.args],
    env: cmd.env,
    cwd: cmd.cwd,
    stderr: "ignore",
  });
  const client = await connected(transport);
  return { client, pid: transport.pid ?? undefined, close: () => client.close() };
}

/** Connects an SDK client over Streamable HTTP (or the older HTTP+SSE transport). */
export async function overHttp(
  url: string,
  headers: Record<string, string> = {},
  kind: "streamable" | "sse" = "streamable",
): Promise<Client> {
  const transport = kind === "sse"
    ? new SSEClientTransport(new URL(url), { requestInit: { headers } })
    : new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  return await connected(transport as Transport);
}

async function connected(transport: Transport): Promise<Client> {
  const client = new Client({ name: "bench", version: "1" }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

/** An HTTP gateway process started on a free loopback port; `clients` connect to it. */
export interface HttpGateway {
  readonly url: string;
  readonly pid: number;
  readonly kind: "streamable" | "sse";
  close(): Promise<void>;
}

/** Spawns `command` and waits until `port` accepts connections. */
export async function spawnListening(
  command: string,
  args: string[],
  env: Record<string, string>,
  port: number,
  path: string,
  kind: "streamable" | "sse" = "streamable",
): Promise<HttpGateway> {
  const child = new Deno.Command(command, {
    args,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`${command} ${args.join(" ")}: nothing listens on ${port} after 30 s`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url: `http://127.0.0.1:${port}${path}`,
    pid: child.pid,
    kind,
    close: async () => {
      try {
        child.kill("SIGTERM");
      } catch { /* gone */ }
      const timer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch { /* gone */ }
      }, 3000);
      await child.status;
      clearTimeout(timer);
    },
  };
}

/** A private HOME for a peer (mcp-remote's tokens, mcp-hub's logs and caches). */
function peerHome(name: string): string {
  const home = Deno.makeTempDirSync({ prefix: `pml-bench-${name}-` });
  homes.push(home);
  return home;
}

/** `mcp-proxy` (npm, TypeScript): stdio server → Streamable HTTP, stateful sessions (its default). */
export function mcpProxy(server: StdioCommand): Promise<HttpGateway> {
  const port = freePort();
  return spawnListening(
    nodePath(),
    [
      BIN("mcp-proxy", "dist/bin/mcp-proxy.mjs"),
      "--host",
      "127.0.0.1",
      "--port",
      `${port}`,
      "--server",
      "stream",
      "--",
      server.command,
      ...server.args,
    ],
    { PATH: Deno.env.get("PATH") ?? "", HOME: peerHome("mcp-proxy"), ...server.env },
    port,
    "/mcp",
  );
}

/** `supergateway`: stdio server → Streamable HTTP, `--stateful` (one child per session). */
export function supergatewayHttp(server: StdioCommand): Promise<HttpGateway> {
  const port = freePort();
  const line = [server.command, ...server.args].map((a) => `'${a}'`).join(" ");
  return spawnListening(
    nodePath(),
    [
      BIN("supergateway", "dist/index.js"),
      "--stdio",
      line,
      "--outputTransport",
      "streamableHttp",
      "--stateful",
      "--port",
      `${port}`,
      "--logLevel",
      "none",
    ],
    { PATH: Deno.env.get("PATH") ?? "", HOME: peerHome("supergateway"), ...server.env },
    port,
    "/mcp",
  );
}

/** `mcp-hub`: one hub of configured servers, its unified endpoint (`GET /mcp`, HTTP+SSE). */
export async function mcpHub(name: string, server: StdioCommand): Promise<HttpGateway> {
  const port = freePort();
  const home = peerHome("mcp-hub");
  // A fresh catalogue cache: mcp-hub fetches its marketplace from the internet when it has none.
  Deno.mkdirSync(join(home, ".mcp-hub", "cache"), { recursive: true });
  Deno.writeTextFileSync(
    join(home, ".mcp-hub", "cache", "registry.json"),
    JSON.stringify({
      registry: { version: "bench", servers: [{ id: "bench" }] },
      lastFetchedAt: Date.now(),
      serverDocumentation: {},
    }),
  );
  const config = join(home, "mcp-hub.json");
  Deno.writeTextFileSync(
    config,
    JSON.stringify({
      mcpServers: {
        [name]: { command: server.command, args: server.args, env: server.env, cwd: server.cwd },
      },
    }),
  );
  const hub = await spawnListening(
    nodePath(),
    [BIN("mcp-hub", "dist/cli.js"), "--port", `${port}`, "--config", config],
    { PATH: "", HOME: home },
    port,
    "/mcp",
    "sse",
  );
  // It listens before its endpoint exists: wait until it says it is ready.
  for (const deadline = Date.now() + 30_000;;) {
    const health = await fetch(`http://127.0.0.1:${port}/api/health`).then((r) => r.json())
      .catch(() => ({}));
    if (health.state === "ready") return hub;
    if (Date.now() > deadline) {
      await hub.close();
      throw new Error(`mcp-hub was not ready after 30 s: ${JSON.stringify(health)}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** `mcp-remote`: stdio → a remote Streamable HTTP server (`--transport http-only`). */
export function mcpRemote(url: string, headers: Record<string, string>): StdioCommand {
  return {
    command: nodePath(),
    args: [
      BIN("mcp-remote", "dist/proxy.js"),
      url,
      "--transport",
      "http-only",
      "--allow-http",
      ...Object.entries(headers).flatMap(([k, v]) => ["--header", `${k}:${v}`]),
    ],
    env: { PATH: Deno.env.get("PATH") ?? "", HOME: peerHome("mcp-remote") },
  };
}

/** `supergateway`: stdio → a remote Streamable HTTP server (`--streamableHttp`). */
export function supergatewayStdio(url: string, headers: Record<string, string>): StdioCommand {
  return {
    command: nodePath(),
    args: [
      BIN("supergateway", "dist/index.js"),
      "--streamableHttp",
      url,
      "--logLevel",
      "none",
      ...Object.entries(headers).flatMap(([k, v]) => ["--header", `${k}: ${v}`]),
    ],
    env: { PATH: Deno.env.get("PATH") ?? "", HOME: peerHome("supergateway") },
  };
}
