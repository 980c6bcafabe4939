/**
 * A real cloud for end-to-end tests, on loopback: the `pml-server` app (`createApp` with its MCP
 * handler, SQLite in memory, seeded from a temporary registry) that records every request it gets,
 * and a real remote MCP server (`@modelcontextprotocol/server-everything` over Streamable HTTP)
 * behind a recording front door, registered as two `http` entries: `upstream` (declares the BYOK
 * variable `UPSTREAM_TOKEN`) and `open` (declares none).
 */
import { join } from "node:path";
import {
  createApiKey,
  createApp,
  createMcpHandler,
  loadRoutingTable,
  seedRegistry,
  SqliteStore,
} from "../../packages/server/mod.ts";

const ROOT = join(import.meta.dirname!, "..", "..");

/** What the cloud (or the upstream) saw of one request. */
export interface Seen {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  /** JSON-RPC method and tool name, when the body was one. */
  readonly rpc?: string;
  readonly tool?: string;
}

async function record(request: Request, into: Seen[]): Promise<Request> {
  const body = request.method === "POST" ? await request.text() : undefined;
  let rpc: string | undefined, tool: string | undefined;
  try {
    const msg = body ? JSON.parse(body) : undefined;
    rpc = msg?.method;
    tool = msg?.params?.name;
  } catch { /* not JSON */ }
  into.push({
    method: request.method,
    path: new URL(request.url).pathname,
    headers: Object.fromEntries(request.headers),
    rpc,
    tool,
  });
  return new Request(request.url, { method: request.method, headers: request.headers, body });
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

async function waitForPort(port: number, ms = 20_000): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    try {
      (await Deno.connect({ hostname: "127.0.0.1", port })).close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`);
}

/** The everything server (Node) on a free port, behind a recording proxy. */
export async function startUpstream() {
  const port = freePort();
  const child = new Deno.Command("node", {
    args: [
      join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
      "streamableHttp",
    ],
    env: { PORT: String(port), PATH: Deno.env.get("PATH") ?? "" },
    clearEnv: true,
    stdout: "null",
    stderr: "null",
  }).spawn();
  await waitForPort(port);
  const seen: Seen[] = [];
  const front = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const r = await record(req, seen);
    const url = new URL(req.url);
    const res = await fetch(`http://127.0.0.1:${port}/mcp${url.search}`, {
      method: r.method,
      headers: r.headers,
      body: r.method === "POST" ? await r.text() : undefined,
    });
    return new Response(res.body, { status: res.status, headers: res.headers });
  });
  return {
    seen,
    /** Base URL of the recording front door; `/u/mcp` and `/o/mcp` both reach the server. */
    url: `http://127.0.0.1:${front.addr.port}`,
    async [Symbol.asyncDispose]() {
      await front.shutdown();
      child.kill("SIGKILL");
      await child.status;
    },
  };
}

/** The paths of the `upstream` and `open` entries under the upstream's URL. */
export interface UpstreamPaths {
  readonly upstream: string;
  readonly open: string;
}

/**
 * The registry folder: the repository's std modules and routing, plus `upstream` and `open`, each
 * listing `echo` and the server-everything tools named in `tools`.
 */
export function writeRegistry(
  dir: string,
  upstreamUrl: string,
  paths: UpstreamPaths,
  tools: readonly string[] = [],
): void {
  Deno.mkdirSync(join(dir, "std"), { recursive: true });
  Deno.mkdirSync(join(dir, "mcp"), { recursive: true });
  Deno.copyFileSync(join(ROOT, "registry/routing.json"), join(dir, "routing.json"));
  for (const e of Deno.readDirSync(join(ROOT, "registry/std"))) {
    if (e.isFile) Deno.copyFileSync(join(ROOT, "registry/std", e.name), join(dir, "std", e.name));
  }
  const echo = (ns: string) => ({
    name: `${ns}:echo`,
    description: "Echoes back the input string",
    inputSchema: {
      type: "object",
      properties: { message: { type: "string" } },
      required: ["message"],
    },
  });
  const others = (ns: string) =>
    tools.map((name) => ({
      name: `${ns}:${name}`,
      description: `server-everything's ${name}`,
      inputSchema: { type: "object", properties: {} },
    }));
  Deno.writeTextFileSync(
    join(dir, "mcp/upstream.json"),
    JSON.stringify({
      type: "http",
      description: "everything, with a key",
      proxyTo: `${upstreamUrl}${paths.upstream}`,
      envRequired: ["UPSTREAM_TOKEN"],
      byok: { env: "UPSTREAM_TOKEN", header: "Authorization", format: "Bearer {key}" },
      tools: [echo("upstream"), ...others("upstream")],
    }),
  );
  Deno.writeTextFileSync(
    join(dir, "mcp/open.json"),
    JSON.stringify({
      type: "http",
      description: "everything, no key",
      proxyTo: `${upstreamUrl}${paths.open}`,
      envRequired: [],
      tools: [echo("open"), ...others("open")],
    }),
  );
}

/**
 * The pml-server app on a fixed loopback port, recording requests (unless `record: false`, for a
 * bench timing pml-server alone: the recorder reads, parses and copies every request). `stop()`
 * and `start()` take the socket down and up again (same store, same key), as a cloud outage would.
 */
export async function startCloud(
  upstreamUrl: string,
  paths: UpstreamPaths = { upstream: "/u/mcp", open: "/o/mcp" },
  options: {
    readonly record?: boolean;
    /** server-everything tools the entries list besides `echo`. */
    readonly tools?: readonly string[];
  } = {},
) {
  const dir = Deno.makeTempDirSync({ prefix: "pml-cloud-" });
  writeRegistry(dir, upstreamUrl, paths, options.tools);
  const store = new SqliteStore(":memory:");
  await store.migrate();
  const routing = await loadRoutingTable(join(dir, "routing.json"));
  await seedRegistry(store, { registryDir: dir, routing });
  const { key } = await createApiKey(store, { label: "e2e" });
  const mcp = createMcpHandler({ store, routing, log: () => {} });
  const app = createApp({ store, routing, mcp, logError: () => {} });
  const seen: Seen[] = [];
  const port = freePort();
  let server: Deno.HttpServer | undefined;
  const start = () => {
    server = Deno.serve(
      { hostname: "127.0.0.1", port, onListen: () => {} },
      options.record === false ? app : async (req) => app(await record(req, seen)),
    );
  };
  start();
  const url = `http://127.0.0.1:${port}`;
  return {
    key,
    seen,
    url,
    /** What a spawned `pml` needs to use this cloud (a short timeout: it is on loopback). */
    env: { PML_CLOUD_URL: url, PML_API_KEY: key, PML_CLOUD_TIMEOUT_MS: "5000" },
    /** Tool calls the cloud received. */
    calls: () => seen.filter((s) => s.rpc === "tools/call"),
    start,
    async stop() {
      mcp.endStreams();
      await server?.shutdown();
      server = undefined;
    },
    async [Symbol.asyncDispose]() {
      // As `pml-server serve` does: the streams it holds open (a relay's GET) end first, else the
      // shutdown waits for them.
      mcp.endStreams();
      await server?.shutdown();
      await mcp.close();
      await store.close();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** Decodes an `X-PML-BYOK` header value. */
export function decodeByok(value: string | undefined): Record<string, string> | undefined {
  return value === undefined
    ? undefined
    : JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(value), (c) => c.charCodeAt(0))));
}
