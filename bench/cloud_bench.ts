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
import { waitForLine } from "../packages/pml/src/testing/wait_for_line.ts";
import { startCloud } from "../tests/e2e/_cloud.ts";
import { spawnServe } from "../tests/e2e/_serve.ts";
import { connectStdio } from "../tests/e2e/_spawn.ts";
import { figure, fmtMs, median, ratio, row, treeCpuTicks } from "./_stats.ts";

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
// The floor of any gateway in pml serve's place: an HTTP relay (bench/_relay.ts http) in front of
// the same server, which prints its port first.
const httpRelay = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", RELAY, "http", cloud.url],
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const relayListens = await waitForLine(httpRelay.stdout, /^(\d+)$/m, "bench/_relay.ts http");
const relayPort = relayListens.match[1];
const viaRelay = await Promise.all(
  Array.from({ length: CLIENTS }, () => httpClient(`http://127.0.0.1:${relayPort}/mcp`, auth)),
);
// Direct, through pml serve and through the relay, interleaved: each round times every side once
// (the order rotating), 100 sequential calls on one session (their median), then 64 sessions ×
// PER_CLIENT calls (calls per second). Ratios are the median of the rounds' own ratios.
const sides = [
  { name: "direct", clients: directs, tool: "json__parse", pid: undefined },
  { name: "serve", clients: sessions, tool: "json:parse", pid: serve.child.pid },
  { name: "relay", clients: viaRelay, tool: "json__parse", pid: httpRelay.pid },
] as const;
type Side = (typeof sides)[number]["name"];
const rounds: Record<Side, { ms: number; rate: number }[]> = { direct: [], serve: [], relay: [] };
const cpu = { serve: 0, relay: 0 };
const SERVE_ROUNDS = 5;
const SEQUENTIAL = 100;
for (const side of sides) {
  await timed(0, () => side.clients[0].callTool({ name: side.tool, arguments: ARGS }));
}
for (let r = 0; r < SERVE_ROUNDS; r++) {
  for (const side of [...sides.slice(r % 3), ...sides.slice(0, r % 3)]) {
    const call = (c: Client) => c.callTool({ name: side.tool, arguments: ARGS }).then(viaCloud);
    const before = side.pid ? treeCpuTicks(side.pid) : 0;
    const ms = median(await timed(SEQUENTIAL, () => call(side.clients[0])));
    const rate = await throughput([...side.clients], call);
    if (side.pid) cpu[side.name as "serve" | "relay"] += treeCpuTicks(side.pid) - before;
    rounds[side.name].push({ ms, rate });
  }
}
await Promise.all(viaRelay.map((c) => c.close()));
httpRelay.kill();
await httpRelay.status;
await relayListens.rest;
const byRound = (f: (r: number) => number) =>
  median(Array.from({ length: SERVE_ROUNDS }, (_, r) => f(r)));
const rate = (side: Side) => byRound((r) => rounds[side][r].rate);
const ms = (side: Side) => byRound((r) => rounds[side][r].ms);
const rateX = (side: Side) => byRound((r) => rounds[side][r].rate / rounds.direct[r].rate);
const msX = (side: Side) => byRound((r) => rounds[side][r].ms / rounds.direct[r].ms);
const perServe = byRound((r) => rounds.serve[r].rate / rounds.relay[r].rate);
const msServe = byRound((r) => rounds.serve[r].ms / rounds.relay[r].ms);
// Calls each side made over the rounds (warm-up of `timed` and of `throughput` included).
const calls = SERVE_ROUNDS * (SEQUENTIAL + 20 + CLIENTS * (PER_CLIENT + 1));
const cpuUs = (side: "serve" | "relay") => (cpu[side] * 10_000) / calls;
console.log(`\npml serve, ${CLIENTS} concurrent sessions × ${PER_CLIENT} calls`);
console.log(`${"filesystem:read_file (local sandbox)".padEnd(44)} ${local.toFixed(0)} calls/s`);
console.log(
  `cloud json:parse, ${SERVE_ROUNDS} interleaved rounds (${SEQUENTIAL} sequential, then ${CLIENTS} sessions)`,
);
for (const side of sides) {
  console.log(
    `${side.name.padEnd(8)} ${fmtMs(ms(side.name)).padStart(9)} ×${msX(side.name).toFixed(2)}  ${
      rate(side.name).toFixed(0).padStart(5)
    } calls/s ×${rateX(side.name).toFixed(2)}${
      side.pid ? `  CPU/call ${cpuUs(side.name as "serve" | "relay").toFixed(0)} µs` : ""
    }`,
  );
}
console.log(
  `pml serve vs the relay: latency ${msServe.toFixed(2)}×, throughput ${perServe.toFixed(2)}×`,
);
figure({
  id: "6b-serve-throughput",
  what:
    `cloud \`json:parse\`, ${CLIENTS} sessions through \`pml serve\` vs direct to \`pml-server\``,
  now: `${rateX("serve").toFixed(2)}× (${rate("serve").toFixed(0)} vs ${
    rate("direct").toFixed(0)
  } calls/s; an HTTP relay in its place: ${rateX("relay").toFixed(2)}×; pml serve ${
    perServe.toFixed(2)
  }× of the relay, CPU per call ${cpuUs("serve").toFixed(0)} µs vs ${cpuUs("relay").toFixed(0)})`,
  target: "≥ 0.9×",
  met: rateX("serve") >= 0.9,
  bench: "cloud",
});
figure({
  id: "6c-serve-latency",
  what: "cloud `json:parse`, sequential, through `pml serve` vs direct to `pml-server`",
  now: `${msX("serve").toFixed(2)}× (${fmtMs(ms("serve"))} vs ${
    fmtMs(ms("direct"))
  }; an HTTP relay in its place: ${msX("relay").toFixed(2)}×; pml serve ${
    msServe.toFixed(2)
  }× of the relay)`,
  target: "≤ 1.25× the relay",
  met: msServe <= 1.25,
  bench: "cloud",
});
await Promise.all([...sessions, ...directs, direct].map((c) => c.close()));
await emptyRegistry.shutdown();
