/**
 * Brought servers (`pml import`, docs/import.md): what listing a `private_mcps` server by the
 * definitions it gave itself costs. `tools/list` through the gateway (SDK client in memory) when
 * the real server-memory is a hand-written `npx -y` entry whose tools are pinned in `.pml/mcp.lock`
 * (read back from the content-addressed cache on every list), against the same server from the
 * built-in catalogue (definitions in the metadata, held in memory): the baseline of the same run.
 * Also the server's own `tools/list` over stdio (what reading them live on every list would cost).
 *
 *   deno run -A bench/import_bench.ts
 */
import { join } from "node:path";
import { loadConfig } from "../packages/pml/src/config/config.ts";
import { trustContentSync } from "../packages/pml/src/config/trust_store.ts";
import { createGateway } from "../packages/pml/src/gateway/create_gateway.ts";
import { createMcpServer } from "../packages/pml/src/gateway/mcp_server.ts";
import { Client } from "../packages/pml/src/sdk/client.ts";
import { InMemoryTransport } from "../packages/pml/src/sdk/in_memory.ts";
import { StdioClientTransport } from "../packages/pml/src/sdk/stdio_client.ts";
import type { StdioTarget } from "../packages/pml/src/targets/stdio/stdio_target.ts";
import { row } from "./_stats.ts";

const ROUNDS = 300;
const PKG = "@modelcontextprotocol/server-memory@2026.8.31";

function workspace(pml: unknown) {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-import-bench-" }));
  Deno.mkdirSync(join(ws, ".git"));
  Deno.mkdirSync(join(ws, "home"));
  const text = JSON.stringify(pml);
  Deno.writeTextFileSync(join(ws, ".pml.json"), text);
  trustContentSync(join(ws, "home"), ws, text); // as `pml trust` would
  const env = Deno.env.toObject();
  const config = loadConfig({
    env: {
      PATH: env.PATH ?? "",
      HOME: env.HOME ?? ws,
      PML_HOME: join(ws, "home"),
      PML_WORKSPACE: ws,
    },
    cwd: ws,
  });
  return { ws, config };
}

async function connect(config: ReturnType<typeof loadConfig>) {
  const gateway = createGateway(config, { prewarm: false });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpServer(gateway).connect(serverSide);
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(clientSide);
  return { gateway, client };
}

async function listTimes(client: Client, want: string): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    const { tools } = await client.listTools();
    times.push(performance.now() - t0);
    if (!tools.some((t) => t.name === want)) throw new Error(`${want} not listed`);
  }
  return times;
}

const brought = workspace({
  approvals: "agent",
  permissions: { allow: ["mem"], ask: [], deny: [] },
  private_mcps: { mem: { type: "stdio", install: { command: "npx", args: ["-y", PKG] } } },
});
const catalogue = workspace({
  approvals: "agent",
  permissions: { allow: ["memory"], ask: [], deny: [] },
});
const b = await connect(brought.config);
const c = await connect(catalogue.config);
try {
  // What `pml import` does: install, record, start, pin the server's own list.
  const pinned = await (b.gateway.target("stdio") as StdioTarget).pinServer("mem");
  console.log(`pinned ${pinned.length} tools of ${PKG}`);
  await listTimes(b.client, "mem__read_graph"); // warm
  await listTimes(c.client, "memory__read_graph");
  const base = await listTimes(c.client, "memory__read_graph");
  const own = await listTimes(b.client, "mem__read_graph");
  // The server's own tools/list, over stdio, from the install PML made.
  const bin = join(
    brought.ws,
    ".pml/deps",
    `mem@2026.8.31`,
    "node_modules/@modelcontextprotocol/server-memory/dist/index.js",
  );
  const direct = new Client({ name: "bench", version: "1" });
  await direct.connect(
    new StdioClientTransport({ command: "node", args: [bin], stderr: "ignore" }),
  );
  const live: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const t0 = performance.now();
    await direct.listTools();
    live.push(performance.now() - t0);
  }
  await direct.close();
  console.log(row("tools/list, catalogue memory (baseline)", base));
  console.log(row("tools/list, brought mem (pinned definitions)", own, base));
  console.log(row("the server's own tools/list over stdio", live, base));
} finally {
  await b.client.close();
  await c.client.close();
  await b.gateway.close();
  await c.gateway.close();
  Deno.removeSync(brought.ws, { recursive: true });
  Deno.removeSync(catalogue.ws, { recursive: true });
}
