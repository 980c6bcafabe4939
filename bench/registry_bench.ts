/**
 * Latency of a registry capability call through the gateway, cold (first fetch: catalog, fetch,
 * hash, lockfile, import policy, sandbox start) and warm (cached module, warm sandbox), against
 * calling the same function in-process as the direct baseline. The registry is the real
 * `pml-server` app on a loopback socket.
 *
 * Run: `deno run -A bench/registry_bench.ts`
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { createApiKey, createApp, loadRoutingTable, SqliteStore } from "../packages/server/mod.ts";
import { loadConfig } from "../packages/pml/src/config/config.ts";
import { trustContentSync } from "../packages/pml/src/config/trust_store.ts";
import { createGateway } from "../packages/pml/src/gateway/create_gateway.ts";
import { figure } from "./_stats.ts";

const COLD = 6;
const WARM = 200;
const CODE = `export async function sum(args: { values: number[] }) {
  return { total: args.values.reduce((a, b) => a + b, 0) };
}`;
const ARGS = { values: [1, 2, 3, 4, 5] };

const root = await Deno.makeTempDir({ prefix: "pml-registry-bench-" });
const store = new SqliteStore(":memory:");
await store.migrate();
const app = createApp({
  store,
  routing: await loadRoutingTable(join(import.meta.dirname!, "..", "registry", "routing.json")),
});
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app);
const url = `http://127.0.0.1:${server.addr.port}`;
const { key } = await createApiKey(store, { label: "bench" });
const published = await fetch(`${url}/mcp`, {
  method: "POST",
  headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  body: JSON.stringify({
    org: "bench",
    project: "p",
    namespace: "calc",
    action: "sum",
    code: CODE,
  }),
});
if (published.status !== 201) throw new Error(`publish failed: ${await published.text()}`);

function workspace(i: number) {
  const dir = join(root, `ws${i}`);
  Deno.mkdirSync(join(dir, ".git"), { recursive: true });
  const text = JSON.stringify({
    registries: [url],
    permissions: { allow: ["calc:*"], ask: [], deny: [] },
  });
  Deno.writeTextFileSync(join(dir, ".pml.json"), text);
  const home = join(root, `home${i}`);
  trustContentSync(join(home, ".pml"), Deno.realPathSync(dir), text); // as `pml trust` would
  return loadConfig({ env: { PML_WORKSPACE: dir, HOME: home, PATH: "" }, cwd: dir, home });
}

const ms = (x: number) => `${x.toFixed(3)} ms`;
const median = (s: number[]) => [...s].sort((a, b) => a - b)[Math.floor(s.length / 2)];

async function call(g: ReturnType<typeof createGateway>) {
  const r = await g.runTool("calc:sum", ARGS, {});
  if (r.isError || (r.structuredContent as { total?: number })?.total !== 15) {
    throw new Error(`unexpected result: ${JSON.stringify(r)}`);
  }
}

// Direct baseline: the same function, imported in-process.
const modPath = join(root, "direct.ts");
Deno.writeTextFileSync(modPath, CODE);
const direct = await import(pathToFileURL(modPath).href);
const directSamples: number[] = [];
for (let i = 0; i < WARM; i++) {
  const t0 = performance.now();
  await direct.sum(ARGS);
  directSamples.push(performance.now() - t0);
}

// Cold: a fresh workspace and PML home each time (empty cache, no lock entry, no sandbox).
const coldSamples: number[] = [];
for (let i = 0; i < COLD; i++) {
  const g = createGateway(workspace(i), { prewarm: false, registry: { warn: () => {} } });
  const t0 = performance.now();
  await call(g);
  coldSamples.push(performance.now() - t0);
  await g.close();
}

// Warm: one session, module cached and sandbox running.
const g = createGateway(workspace(COLD), { prewarm: false });
await call(g);
const warmSamples: number[] = [];
for (let i = 0; i < WARM; i++) {
  const t0 = performance.now();
  await call(g);
  warmSamples.push(performance.now() - t0);
}
await g.close();
await server.shutdown();
await store.close();
await Deno.remove(root, { recursive: true });

const d = median(directSamples);
const c = median(coldSamples);
const w = median(warmSamples);
console.log(`registry capability call (calc:sum), registry = pml-server on loopback`);
console.log(`  direct in-process call   median ${ms(d)}  (n=${WARM})`);
console.log(
  `  warm (cached, sandbox)   median ${ms(w)}  (n=${WARM})  ${(w / d).toFixed(0)}x direct`,
);
console.log(
  `  cold (first fetch)       median ${ms(c)}  (n=${COLD})  ${(c / d).toFixed(0)}x direct, ${
    (c / w).toFixed(1)
  }x warm`,
);
figure({
  id: "9-registry",
  what: "registry capability call (`calc:sum`), warm and first fetch",
  now: `${ms(w)} warm, ${ms(c)} first fetch`,
  target: "(anchor)",
  bench: "registry",
});
