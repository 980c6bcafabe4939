/**
 * Stdio dependencies: `memory:read_graph` through PML (SDK client → in-memory MCP → gateway →
 * StdioTarget → `@modelcontextprotocol/server-memory` under Deno) against the same server, started
 * with the same command, called directly with the SDK client over stdio. Per-call latency (median,
 * p99) and throughput with 64 concurrent calls with the gateway in process; throughput and
 * sequential latency through a spawned `pml stdio` as an agent runs it, timed in the same rounds as
 * `bench/_relay.ts` in its place (the floor) and the direct client; and cold start (spawn →
 * initialize → tools/list) under Deno vs
 * `node <bin>` vs `npx --offline`. The install is PML's own (`--prefer-offline`): from npm's
 * cache, fetched from the registry on a machine that has not cached the package yet.
 *
 *   deno run -A bench/deps_bench.ts
 */
import { join } from "node:path";
import { loadConfig } from "../packages/pml/src/config/config.ts";
import { trustContentSync } from "../packages/pml/src/config/trust_store.ts";
import { NpmInstaller } from "../packages/pml/src/deps/installer.ts";
import { denoLaunch, type LaunchSpec } from "../packages/pml/src/deps/launch.ts";
import { parseStdioMetadata } from "../packages/pml/src/deps/metadata.ts";
import { CATALOGUE_DIR } from "../packages/pml/src/deps/sources.ts";
import { createGateway } from "../packages/pml/src/gateway/create_gateway.ts";
import { createMcpServer } from "../packages/pml/src/gateway/mcp_server.ts";
import { Client } from "../packages/pml/src/sdk/client.ts";
import { InMemoryTransport } from "../packages/pml/src/sdk/in_memory.ts";
import { StdioClientTransport } from "../packages/pml/src/sdk/stdio_client.ts";
import { figure, fmtMs, median, row } from "./_stats.ts";

const SEQUENTIAL = 1000;
const CONCURRENCY = 64;
const CONCURRENT_TOTAL = 2000;
const THROUGHPUT_ROUNDS = 5;
/** Sequential calls per side and round on the agent's path (spawned pml stdio, relay, direct). */
const AGENT_SEQUENTIAL = 200;
/** Issue 31 item 4: through a stdio dependency, within this factor of the relay floor. */
const RELAY_FACTOR = 1.15;
const COLD_ROUNDS = 5;

const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-deps-bench-" }));
Deno.mkdirSync(join(ws, ".git"));
Deno.mkdirSync(join(ws, "home"));
// The bench answers the install itself (a human answers it by default: docs/approvals.md).
const pmlJson = JSON.stringify({
  approvals: "agent",
  permissions: { allow: ["memory"], ask: [], deny: [] },
});
Deno.writeTextFileSync(join(ws, ".pml.json"), pmlJson);
trustContentSync(join(ws, "home"), ws, pmlJson); // as `pml trust` would
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
const installer = new NpmInstaller({ env: config.env });

// PML: the gateway with an in-memory MCP client in front, as `pml stdio` has minus the pipe.
const gateway = createGateway(config, { prewarm: false, stdio: { installer } });
const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
await createMcpServer(gateway).connect(serverSide);
const pml = new Client({ name: "bench", version: "1" });
await pml.connect(clientSide);
const installStart = performance.now();
const pending = await pml.callTool({ name: "memory__read_graph", arguments: {} });
const workflowId = (pending.structuredContent as { workflow_id: string }).workflow_id;
const installed = await pml.callTool({
  name: "pml__continue",
  arguments: { workflow_id: workflowId, decision: "yes" },
});
if (installed.isError) {
  throw new Error(`deps bench: install failed: ${JSON.stringify(installed.content)}`);
}
const installMs = performance.now() - installStart;
await pml.callTool({
  name: "memory__create_entities",
  arguments: {
    entities: [1, 2, 3].map((i) => ({ name: `e${i}`, entityType: "bench", observations: ["o"] })),
  },
});

// Direct: the same server, same Deno command and grants, driven by the SDK client over stdio.
const meta = parseStdioMetadata(
  "memory",
  JSON.parse(Deno.readTextFileSync(join(CATALOGUE_DIR, "memory.json"))),
  "catalogue",
);
const inst = (await installer.inspect(
  meta.package!,
  join(ws, ".pml", "deps", `memory@${meta.package!.version}`),
))!;
const spec = denoLaunch(meta, inst, {
  workspace: ws,
  denoPath: Deno.execPath(),
  denoDir: join(config.pmlHome, "deno"),
  env: config.env,
});

async function stdioClient(
  command: string,
  args: readonly string[],
  clientEnv: Record<string, string>,
) {
  const transport = new StdioClientTransport({
    command,
    args: [...args],
    cwd: ws,
    env: clientEnv,
    stderr: "ignore",
  });
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(transport);
  return client;
}
const direct = await stdioClient(spec.command, spec.args, { ...spec.env });

const callPml = async () => {
  const r = await pml.callTool({ name: "memory__read_graph", arguments: {} });
  if (r.isError) throw new Error(`pml: ${JSON.stringify(r.content)}`);
};
const callDirect = async () => {
  const r = await direct.callTool({ name: "read_graph", arguments: {} });
  if (r.isError) throw new Error(`direct: ${JSON.stringify(r.content)}`);
};

async function timed(fn: () => Promise<void>, into: number[]) {
  const t0 = performance.now();
  await fn();
  into.push(performance.now() - t0);
}

// 1. Sequential latency, alternating turns so both see the same load.
for (let i = 0; i < 100; i++) (await callPml(), await callDirect());
const viaPml: number[] = [];
const viaDirect: number[] = [];
for (let i = 0; i < SEQUENTIAL; i++) {
  if (i % 2 === 0) (await timed(callPml, viaPml), await timed(callDirect, viaDirect));
  else (await timed(callDirect, viaDirect), await timed(callPml, viaPml));
}

// 2. Throughput: CONCURRENT_TOTAL calls, CONCURRENCY in flight at any time.
async function throughput(call: () => Promise<void>): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < CONCURRENT_TOTAL) await call();
    }),
  );
  return CONCURRENT_TOTAL / ((performance.now() - t0) / 1000);
}
/**
 * Rounds of both sides, one right after the other (which goes first alternates): the ratio is the
 * median of the rounds' own ratios, so a machine that speeds up or slows down between rounds (it
 * does, by 1.5x here) moves both sides of a ratio together.
 */
async function throughputRounds(viaPml: () => Promise<void>) {
  await throughput(viaPml); // warm-up (JIT) of both paths
  await throughput(callDirect);
  const pmlRounds: number[] = [];
  const directRounds: number[] = [];
  const ratios: number[] = [];
  for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
    let p: number, d: number;
    if (round % 2 === 0) (p = await throughput(viaPml), d = await throughput(callDirect));
    else (d = await throughput(callDirect), p = await throughput(viaPml));
    pmlRounds.push(p);
    directRounds.push(d);
    ratios.push(p / d);
  }
  return { pml: median(pmlRounds), direct: median(directRounds), ratio: median(ratios), ratios };
}
const inProcess = await throughputRounds(callPml);

type Side = "pml" | "relay" | "direct";
/**
 * The spawned `pml stdio`, the relay and the direct client, in {@link THROUGHPUT_ROUNDS} rounds: in
 * each, a 64-way throughput run of each side (the order rotating), then {@link AGENT_SEQUENTIAL}
 * sequential calls of each side taken in turns (a call of each, the order rotating), as the first
 * section does for two. Each ratio is the median of the rounds' own ratios.
 */
async function agentPathRounds(calls: Record<Side, () => Promise<void>>) {
  const sides = Object.keys(calls) as Side[];
  for (const side of sides) await throughput(calls[side]); // warm-up (JIT)
  const perSecond: Record<Side, number[]> = { pml: [], relay: [], direct: [] };
  const latency: Record<Side, number[]> = { pml: [], relay: [], direct: [] };
  for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
    const order = sides.map((_, i) => sides[(i + round) % sides.length]);
    for (const side of order) perSecond[side].push(await throughput(calls[side]));
    const samples: Record<Side, number[]> = { pml: [], relay: [], direct: [] };
    for (let i = 0; i < AGENT_SEQUENTIAL; i++) {
      for (let k = 0; k < sides.length; k++) {
        const side = order[(i + k) % sides.length];
        await timed(calls[side], samples[side]);
      }
    }
    for (const side of sides) latency[side].push(median(samples[side]));
  }
  const ratio = (of: number[], to: number[]) => median(of.map((x, i) => x / to[i]));
  return {
    perSecond,
    latency,
    throughput: {
      pml: ratio(perSecond.pml, perSecond.direct),
      relay: ratio(perSecond.relay, perSecond.direct),
      pmlToRelay: ratio(perSecond.pml, perSecond.relay),
    },
    latencyRatio: {
      pml: ratio(latency.pml, latency.direct),
      relay: ratio(latency.relay, latency.direct),
      pmlToRelay: ratio(latency.pml, latency.relay),
    },
  };
}

// The agent's path: the same calls through a spawned `pml stdio` (the launcher, the same
// workspace and install), so the gateway's process hop and its V8 settings are in the figure; and
// the floor of any gateway in that place, a relay that only parses and rewrites each message
// (bench/_relay.ts), between the same client and the same server command. Both are timed with the
// direct client in the same rounds (the order rotating), so that the ratio between them is taken
// under the same load.
const spawned = await stdioClient(join(import.meta.dirname!, "..", "bin", "pml"), ["stdio"], {
  PATH: env.PATH ?? "",
  HOME: env.HOME ?? ws,
  PML_HOME: join(ws, "home"),
  PML_WORKSPACE: ws,
});
const callSpawned = async () => {
  const r = await spawned.callTool({ name: "memory__read_graph", arguments: {} });
  if (r.isError) throw new Error(`pml stdio: ${JSON.stringify(r.content)}`);
};
// Installed and recorded by the gateway above: nothing is asked (an approval would be timed instead).
const first = await spawned.callTool({ name: "memory__read_graph", arguments: {} });
if (first.isError || (first.structuredContent as { workflow_id?: string })?.workflow_id) {
  throw new Error(`deps bench: pml stdio did not run the call: ${JSON.stringify(first)}`);
}
const relay = await stdioClient(
  Deno.execPath(),
  ["run", "-A", join(import.meta.dirname!, "_relay.ts"), "stdio", spec.command, ...spec.args],
  { ...spec.env },
);
const callRelay = async () => {
  const r = await relay.callTool({ name: "read_graph", arguments: {} });
  if (r.isError) throw new Error(`relay: ${JSON.stringify(r.content)}`);
};
const agentPath = await agentPathRounds({
  pml: callSpawned,
  relay: callRelay,
  direct: callDirect,
});
await spawned.close();
await relay.close();

await pml.close();
await gateway.close();
await direct.close();

// 3. Cold start: spawn → initialize → tools/list, then close.
async function coldStart(
  command: string,
  args: readonly string[],
  clientEnv: Record<string, string>,
) {
  const samples: number[] = [];
  for (let i = 0; i < COLD_ROUNDS; i++) {
    const t0 = performance.now();
    const client = await stdioClient(command, args, clientEnv);
    await client.listTools();
    samples.push(performance.now() - t0);
    await client.close();
  }
  return samples;
}
const pathEnv = { PATH: env.PATH ?? "/usr/bin:/bin", HOME: env.HOME ?? ws };
const coldDeno = await coldStart(spec.command, spec.args, { ...spec.env });
const coldNode = await coldStart("node", [inst.bin], pathEnv);
const npxSpec = `${meta.package!.name}@${meta.package!.version}`;
// npx reads other npm metadata than an install: one untimed run caches it (a fresh machine has none).
await (await stdioClient("npx", ["--prefer-offline", "-y", npxSpec], pathEnv)).close();
const coldNpx = await coldStart("npx", ["--offline", "-y", npxSpec], pathEnv);

const p = (spec: LaunchSpec) => spec.args.filter((a) => a.startsWith("--allow")).join(" ");
console.log(`deps bench: memory:read_graph (3 entities), ${SEQUENTIAL} sequential calls per side`);
console.log(
  `  first use: approval + npm install (cache first) + integrity check + start: ${
    installMs.toFixed(0)
  } ms`,
);
console.log(`  server grants: ${p(spec).replaceAll(ws, "<ws>")} --ignore-env`);
console.log(`  ${row("via pml (gateway → StdioTarget → server)", viaPml, viaDirect)}`);
console.log(`  ${row("direct (SDK client → same server)", viaDirect)}`);
console.log(
  `  overhead: median +${(median(viaPml) - median(viaDirect)).toFixed(3)} ms (target ≤ +1 ms)`,
);
/** The report line of the in-process throughput measurement. */
function throughputLine(label: string, t: typeof inProcess) {
  console.log(
    `  throughput, ${CONCURRENCY} concurrent (${THROUGHPUT_ROUNDS} rounds), ${label}: pml ${
      t.pml.toFixed(0)
    } calls/s, direct ${t.direct.toFixed(0)} calls/s (medians), ratio ${
      t.ratio.toFixed(2)
    }× (median of the rounds' ratios: ${
      t.ratios.map((r) => r.toFixed(2)).join(", ")
    }; target ≥ 0.9×)`,
  );
}
figure({
  id: "6-throughput",
  what: `${CONCURRENCY}-way throughput through a stdio dependency (memory:read_graph) vs direct`,
  now: `${inProcess.ratio.toFixed(2)}× (${inProcess.pml.toFixed(0)} vs ${
    inProcess.direct.toFixed(0)
  } calls/s)`,
  target: "≥ 0.9×",
  met: inProcess.ratio >= 0.9,
  bench: "deps",
});
throughputLine("gateway in process", inProcess);
const calls = (side: Side) => median(agentPath.perSecond[side]).toFixed(0);
const ms = (side: Side) => fmtMs(median(agentPath.latency[side]));
const byRound = (of: Side, to: Side, m: Record<Side, number[]>) =>
  m[of].map((x, i) => (x / m[to][i]).toFixed(2)).join(", ");
const t = agentPath.throughput;
const l = agentPath.latencyRatio;
console.log(
  `  the agent's path (${THROUGHPUT_ROUNDS} rounds, each side in turn): a spawned pml stdio, a relay` +
    ` that only parses each message (bench/_relay.ts stdio) and the direct client`,
);
console.log(
  `    throughput, ${CONCURRENCY} concurrent: pml ${calls("pml")}, relay ${
    calls("relay")
  }, direct ${calls("direct")} calls/s (medians); pml ${t.pml.toFixed(2)}×, relay ${
    t.relay.toFixed(2)
  }× of direct; pml ${t.pmlToRelay.toFixed(2)}× of the relay (rounds: ${
    byRound("pml", "relay", agentPath.perSecond)
  })`,
);
console.log(
  `    latency, ${AGENT_SEQUENTIAL} sequential calls a round: pml ${ms("pml")}, relay ${
    ms("relay")
  }, direct ${ms("direct")} (medians of the rounds' medians); pml ${l.pml.toFixed(2)}×, relay ${
    l.relay.toFixed(2)
  }× of direct; pml ${l.pmlToRelay.toFixed(2)}× the relay's (rounds: ${
    byRound("pml", "relay", agentPath.latency)
  })`,
);
figure({
  id: "6a-throughput-stdio",
  what: `${CONCURRENCY}-way throughput through a stdio dependency via a spawned \`pml stdio\` ` +
    `(the agent's path) vs direct`,
  now: `${t.pml.toFixed(2)}× (${calls("pml")} vs ${calls("direct")} calls/s); a relay that only ` +
    `parses each message, in its place: ${t.relay.toFixed(2)}×; pml ÷ relay ${
      t.pmlToRelay.toFixed(2)
    }`,
  target: `≥ the relay's ÷ ${RELAY_FACTOR} (pml ÷ relay ≥ ${(1 / RELAY_FACTOR).toFixed(2)})`,
  met: t.pmlToRelay >= 1 / RELAY_FACTOR,
  bench: "deps",
});
figure({
  id: "6a-latency-stdio",
  what: "sequential latency through a stdio dependency via a spawned `pml stdio` vs direct",
  now: `${l.pml.toFixed(2)}× (${ms("pml")} vs ${ms("direct")}); the relay in its place: ${
    l.relay.toFixed(2)
  }× (${ms("relay")}); pml ÷ relay ${l.pmlToRelay.toFixed(2)}`,
  target: `≤ the relay's × ${RELAY_FACTOR}`,
  met: l.pmlToRelay <= RELAY_FACTOR,
  bench: "deps",
});
console.log(`  ${row("cold start under Deno (spawn → tools/list)", coldDeno, coldNode)}`);
console.log(`  ${row("cold start node <bin>", coldNode)}`);
console.log(`  ${row("cold start npx --offline", coldNpx, coldNode)}`);
await Deno.remove(ws, { recursive: true }).catch(() => {});
