/**
 * Cloud path and `pml serve` throughput, all on loopback, in one run:
 *
 * 1. `json:parse` through `pml stdio` → pml-server, against the same call on the server's MCP
 *    endpoint with the SDK client directly (baseline): the ratio is what the gateway adds.
 * 2. `pml:execute` of code calling 3 server tools (the server runs it: one round trip) against the
 *    same 3 calls made one by one through `pml stdio`.
 * 3. `pml serve` under 64 concurrent sessions: local `filesystem:read_file` and cloud `json:parse`
 *    calls per second, against 64 direct sessions to the server.
 *
 * The cloud is the real `createApp()` of pml-server with its MCP handler (SQLite in memory). The
 * package's `registries` point at an empty registry so that `json:parse` is not taken by the
 * registry deno-module target (see the report: it currently claims server-routed std tools).
 *
 * Run: `deno run -A bench/cloud_bench.ts`
 */
import { join } from "node:path";
import { Client } from "../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../packages/pml/src/sdk/http_client.ts";
import { StdioClientTransport } from "../packages/pml/src/sdk/stdio_client.ts";
import { tempWorkspace } from "../packages/pml/src/testing/workspace.ts";
import { startCloud } from "../tests/e2e/_cloud.ts";
import { spawnServe } from "../tests/e2e/_serve.ts";
import { connectStdio } from "../tests/e2e/_spawn.ts";
import { figure, fmtMs, median, ratio, row } from "./_stats.ts";

const RELAY = join(import.meta.dirname!, "_relay.ts");
const ROUNDS = 300;
const CLIENTS = 64;
const PER_CLIENT = 10;
const ARGS = { text: '{"a":[1,2,3],"b":{"c":"d"}}' };

async function httpClient(url: string, headers: Record<string, string> = {}) {
  const client = new Client({ name: "bench", version: "1" }, { capabilities: {} });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }),
  );
  return client;
}

async function timed(n: number, call: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < 20; i++) await call(); // warm-up
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await call();
    samples.push(performance.now() - t);
  }
  return samples;
}

async function throughput(clients: Client[], call: (c: Client) => Promise<unknown>) {
  for (const c of clients) await call(c);
  const t = performance.now();
  await Promise.all(clients.map(async (c) => {
    for (let i = 0; i < PER_CLIENT; i++) await call(c);
  }));
  return (clients.length * PER_CLIENT) / ((performance.now() - t) / 1000);
}

const emptyRegistry = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: () => {} },
  () => Response.json({ items: [], total: 0, page: 1, limit: 100 }),
);
await using cloud = await startCloud("http://127.0.0.1:9");
await using ws = tempWorkspace({
  permissions: { allow: ["filesystem", "json", "math", "text"], ask: [], deny: [] },
  registries: [`http://127.0.0.1:${emptyRegistry.addr.port}`],
});
ws.write("r.txt", "bench");
const env = { PML_CLOUD_URL: cloud.url, PML_API_KEY: cloud.key };
const auth = { authorization: `Bearer ${cloud.key}` };

const direct = await httpClient(`${cloud.url}/mcp`, auth);
await using stdio = await connectStdio(ws, { env });
const viaCloud = (r: unknown) => {
  if ((r as { isError?: boolean }).isError) throw new Error(JSON.stringify(r));
};
const before = cloud.calls().length;
const base = await timed(
  ROUNDS,
  async () => viaCloud(await direct.callTool({ name: "json__parse", arguments: ARGS })),
);
const pml = await timed(
  ROUNDS,
  async () => viaCloud(await stdio.callTool({ name: "json:parse", arguments: ARGS })),
);
// The same calls from an SDK client in its own process, as a real client would make them: the
// in-process anchor shares the server's event loop and pays no process wake-up on either side.
const apart = await new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "-A",
    join(import.meta.dirname!, "_direct_client.ts"),
    cloud.url,
    cloud.key,
    `${ROUNDS}`,
  ],
  stdout: "piped",
  stderr: "inherit",
}).output();
if (!apart.success) throw new Error("bench/_direct_client.ts failed");
const baseApart: number[] = JSON.parse(new TextDecoder().decode(apart.stdout));
// The floor of any gateway in pml stdio's place: a relay that only parses each JSON-RPC line and
// posts it to the same endpoint (bench/_relay.ts cloud), driven by the same kind of stdio client.
const relay = new Client({ name: "bench", version: "1" }, { capabilities: {} });
await relay.connect(
  new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", "-A", RELAY, "cloud", `${cloud.url}/mcp`, cloud.key],
    stderr: "inherit",
  }),
);
const relayed = await timed(
  ROUNDS,
  async () => viaCloud(await relay.callTool({ name: "json__parse", arguments: ARGS })),
);
await relay.close();
const reached = cloud.calls().length - before;
console.log(`json:parse, ${ROUNDS} sequential calls (cloud saw ${reached} tools/call in total)`);
console.log(row("direct SDK client → pml-server /mcp", base));
console.log(row("direct SDK client, its own process", baseApart, base));
console.log(row("relay that only parses messages (floor)", relayed, base));
console.log(row("pml stdio → CloudTarget → pml-server", pml, base));
console.log(`  vs the client in its own process: ${ratio(median(pml), median(baseApart))}`);
console.log(`  added by pml: ${(median(pml) - median(base)).toFixed(2)} ms per call`);
figure({
  id: "2-cloud",
  what: "cloud `json:parse` through `pml stdio` vs an SDK client calling `pml-server` directly",
  now: `${ratio(median(pml), median(base))} (${fmtMs(median(pml))} vs ${fmtMs(median(base))}; ${
    ratio(median(pml), median(baseApart))
  } of a client in its own process, ${
    fmtMs(median(baseApart))
  }; a relay that only parses each message, in its place: ${ratio(median(relayed), median(base))})`,
  target: "≤ 1.3×",
  met: median(pml) <= 1.3 * median(base),
  bench: "cloud",
});

// 3. pml:execute of server-only code: the package sends it to the server, which runs it in its
//    sandbox (one round trip), against the same three calls made one by one through pml stdio.
const SNIPPET = `
  const v = await mcp.json.parse(${JSON.stringify(ARGS)});
  const n = await mcp.math.evaluate({ expression: v.a.join(" + ") });
  return await mcp.text.slugify({ text: "total " + n });`;
const threeCalls = async () => {
  const v = await stdio.callTool({ name: "json:parse", arguments: ARGS });
  viaCloud(v);
  viaCloud(await stdio.callTool({ name: "math:evaluate", arguments: { expression: "1 + 2 + 3" } }));
  viaCloud(await stdio.callTool({ name: "text:slugify", arguments: { text: "total 6" } }));
};
// As in execute_bench.ts: the pause lets the server's next warm sandbox start (~85 ms on this VM) and
// warm up, as it does between an agent's turns.
const SETTLE_MS = 250;
const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));
const execute = async () =>
  viaCloud(await stdio.callTool({ name: "pml__execute", arguments: { code: SNIPPET } }));
const execSamples: number[] = [];
const callSamples: number[] = [];
for (let i = 0; i < 3; i++) (await execute(), await threeCalls(), await settle());
for (let i = 0; i < 40; i++) {
  const order = i % 2 === 0 ? [execute, threeCalls] : [threeCalls, execute];
  for (const fn of order) {
    const t = performance.now();
    await fn();
    (fn === execute ? execSamples : callSamples).push(performance.now() - t);
  }
  await settle();
}
console.log(`\npml:execute of server-only code (json, math, text), through pml stdio`);
console.log(row("3 calls one by one (3 cloud round trips)", callSamples));
console.log(row("pml:execute, run on the server", execSamples, callSamples));
figure({
  id: "2b-cloud-execute",
  what: "`pml:execute` of 3 server tools vs the same 3 calls through `pml stdio`",
  now: `${ratio(median(execSamples), median(callSamples))} (${fmtMs(median(execSamples))} vs ${
    fmtMs(median(callSamples))
  })`,
  target: "≤ 1.0×",
  met: median(execSamples) <= median(callSamples),
  bench: "cloud",
});

await using serve = await spawnServe(ws, env);
const sessions = await Promise.all(Array.from({ length: CLIENTS }, () => httpClient(serve.url)));
const directs = await Promise.all(
  Array.from({ length: CLIENTS }, () => httpClient(`${cloud.url}/mcp`, auth)),
);
const local = await throughput(
  sessions,
  (c) => c.callTool({ name: "filesystem__read_file", arguments: { path: "r.txt" } }),
);
const cloudDirect = await throughput(
  directs,
  (c) => c.callTool({ name: "json__parse", arguments: ARGS }),
);
const cloudVia = await throughput(
  sessions,
  (c) => c.callTool({ name: "json:parse", arguments: ARGS }),
);
// The floor of any gateway in pml serve's place: an HTTP relay (bench/_relay.ts http) in front of
// the same server, which prints its port first.
const httpRelay = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", RELAY, "http", cloud.url],
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const relayOut = httpRelay.stdout.pipeThrough(new TextDecoderStream()).getReader();
const relayPort = Number((await relayOut.read()).value?.trim());
if (!relayPort) throw new Error("bench/_relay.ts http printed no port");
const viaRelay = await Promise.all(
  Array.from({ length: CLIENTS }, () => httpClient(`http://127.0.0.1:${relayPort}/mcp`, auth)),
);
const cloudRelay = await throughput(
  viaRelay,
  (c) => c.callTool({ name: "json__parse", arguments: ARGS }),
);
await Promise.all(viaRelay.map((c) => c.close()));
httpRelay.kill();
await relayOut.cancel();
await httpRelay.status;
console.log(`\npml serve, ${CLIENTS} concurrent sessions × ${PER_CLIENT} calls`);
console.log(`${"filesystem:read_file (local sandbox)".padEnd(44)} ${local.toFixed(0)} calls/s`);
console.log(`${"json:parse direct to pml-server".padEnd(44)} ${cloudDirect.toFixed(0)} calls/s`);
console.log(
  `${"json:parse via pml serve → pml-server".padEnd(44)} ${cloudVia.toFixed(0)} calls/s  ratio ${
    (cloudVia / cloudDirect).toFixed(2)
  }× of direct`,
);
console.log(
  `${"json:parse via an HTTP relay (floor)".padEnd(44)} ${cloudRelay.toFixed(0)} calls/s  ratio ${
    (cloudRelay / cloudDirect).toFixed(2)
  }× of direct`,
);
figure({
  id: "6b-serve-throughput",
  what:
    `cloud \`json:parse\`, ${CLIENTS} sessions through \`pml serve\` vs direct to \`pml-server\``,
  now: `${ratio(cloudVia, cloudDirect)} (${cloudVia.toFixed(0)} vs ${
    cloudDirect.toFixed(0)
  } calls/s; an HTTP relay in its place: ${ratio(cloudRelay, cloudDirect)})`,
  target: "≥ 0.9×",
  met: cloudVia >= 0.9 * cloudDirect,
  bench: "cloud",
});
await Promise.all([...sessions, ...directs, direct].map((c) => c.close()));
await emptyRegistry.shutdown();
