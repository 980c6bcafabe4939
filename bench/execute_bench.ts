/**
 * `pml:execute` of a snippet with 3 sequential local `filesystem:read_file` calls, against the same
 * 3 calls made directly as `tools/call`, in the same run:
 *
 * - through a spawned `bin/pml stdio` driven by the SDK client, as an agent would (the comparison
 *   the issue asks for: `pml:execute` must be faster);
 * - through the gateway in process over the SDK's in-memory transport (no client↔gateway pipe, so
 *   it shows the sandbox's own cost).
 *
 * Each transport also times the same 3 reads written as a `map` over a `const` list in a
 * `Promise.all` (the form agents often write; read ahead since the analysis reads `map` callbacks).
 *
 * A third row times the 3 direct calls as an agent makes them, one per turn: a pause (not counted)
 * before each call, so each starts from idle processes. Back to back (the first row) is the best
 * case for direct calls; one per turn is how they happen, minus the model's own time per turn,
 * which is what `pml:execute` really saves and no benchmark here can count.
 *
 * The two orders alternate, and each measurement is followed by a pause of {@link SETTLE_MS}: an
 * agent does not fire executions back to back (it thinks between tool calls), and the pause lets
 * the next warm sandbox start and warm up, as it would between an agent's calls. So every
 * measurement starts from idle processes, which on a VM makes the first hop of each slower.
 *
 * The paused case: execute and the 3 direct calls alternate, each measured after a pause of
 * {@link PAUSE_MS}, past `pml stdio`'s idle collection (an agent thinking for a second or more
 * between two calls): what code mode costs after a pause rather than back to back.
 * `EXECUTE_AGAINST=<another checkout of this repository>` times that checkout's `bin/pml stdio` in
 * the same paused rounds (a before/after comparison on one loaded machine).
 *
 * Also the start of an execution sandbox: taken from the warm pool vs started cold (spawn → first
 * result of `return 1`).
 *
 *   deno task bench execute
 */
import { join } from "node:path";
import { connectStdio } from "../tests/e2e/_spawn.ts";
import { IDLE_COLLECT_MS } from "../packages/pml/src/sandbox/_idle_gc.ts";
import { execSandboxSpec } from "../packages/pml/src/execute/mod.ts";
import { ExecSandboxPool } from "../packages/pml/src/execute/warm_pool.ts";
import type { Client } from "../packages/pml/src/sdk/client.ts";
import { gatewayFor, tempWorkspace, textOf } from "../packages/pml/src/testing/workspace.ts";
import { figure, fmtMs, median, ratio, row } from "./_stats.ts";

const ROUNDS = 40;
const WARMUP_ROUNDS = 3;
const SANDBOX_ROUNDS = 15;
const SETTLE_MS = 250;
/** An agent's pause between two calls: past `pml stdio`'s idle collection. */
const PAUSE_MS = IDLE_COLLECT_MS + 500;
const PAUSED_ROUNDS = Number(Deno.env.get("EXECUTE_PAUSED_ROUNDS") ?? 30);
const AGAINST = Deno.env.get("EXECUTE_AGAINST");

const SNIPPET = `
  const a = await mcp.filesystem.read_file({ path: "f1.txt" });
  const b = await mcp.filesystem.read_file({ path: "f2.txt" });
  const c = await mcp.filesystem.read_file({ path: "f3.txt" });
  return a.length + b.length + c.length;`;

/** The same 3 reads as an agent often writes them: a `map` over a list, all at once. */
const MAPPED = `
  const files = ["f1.txt", "f2.txt", "f3.txt"];
  const texts = await Promise.all(files.map((f) => mcp.filesystem.read_file({ path: f })));
  return texts.reduce((n, t) => n + t.length, 0);`;

await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
for (const n of [1, 2, 3]) ws.write(`f${n}.txt`, `file ${n} `.repeat(400));

async function run(client: Client, code: string): Promise<void> {
  const res = await client.callTool({ name: "pml__execute", arguments: { code } });
  if (res.isError || !textOf(res).includes('"success"')) throw new Error(textOf(res));
}
const viaExecute = (client: Client) => run(client, SNIPPET);
const viaExecuteMapped = (client: Client) => run(client, MAPPED);

async function direct(client: Client): Promise<void> {
  for (const n of [1, 2, 3]) {
    const res = await client.callTool({
      name: "filesystem__read_file",
      arguments: { path: `f${n}.txt` },
    });
    if (res.isError) throw new Error(textOf(res));
  }
}

const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));

/**
 * The 3 calls as an agent makes them: one per turn, the model thinking in between (a pause before
 * each call, not counted). Each call then starts from idle processes, as in real use.
 */
async function directPaced(client: Client): Promise<number> {
  let total = 0;
  for (const n of [1, 2, 3]) {
    await settle();
    const t0 = performance.now();
    const res = await client.callTool({
      name: "filesystem__read_file",
      arguments: { path: `f${n}.txt` },
    });
    total += performance.now() - t0;
    if (res.isError) throw new Error(textOf(res));
  }
  return total;
}

/**
 * Interleaved rounds of the three ways on one client (the order rotates):
 * [direct samples, execute samples, execute-with-map samples].
 */
async function compare(client: Client): Promise<[number[], number[], number[]]> {
  const ways = [direct, viaExecute, viaExecuteMapped];
  const samples: [number[], number[], number[]] = [[], [], []];
  for (let i = 0; i < WARMUP_ROUNDS; i++) {
    for (const fn of ways) await fn(client);
    await settle();
  }
  for (let i = 0; i < ROUNDS; i++) {
    for (let k = 0; k < ways.length; k++) {
      const way = (i + k) % ways.length;
      const t0 = performance.now();
      await ways[way](client);
      samples[way].push(performance.now() - t0);
      await settle();
    }
  }
  return samples;
}

/**
 * Execute and the 3 direct calls, alternating, each after {@link PAUSE_MS}; per client:
 * [direct samples, execute samples]. With several clients (this checkout and another), each round
 * times every client in turn.
 */
async function pausedCompare(clients: Client[]): Promise<[number[], number[]][]> {
  const samples = clients.map((): [number[], number[]] => [[], []]);
  const ways = [direct, viaExecute];
  for (let i = 0; i < PAUSED_ROUNDS; i++) {
    for (let k = 0; k < ways.length; k++) {
      const way = (i + k) % ways.length;
      for (let c = 0; c < clients.length; c++) {
        await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
        const t0 = performance.now();
        await ways[way](clients[c]);
        samples[c][way].push(performance.now() - t0);
      }
    }
  }
  return samples;
}

let stdio: [number[], number[], number[]];
const paced: number[] = [];
let paused: [number[], number[]][];
{
  await using client = await connectStdio(ws);
  stdio = await compare(client);
  for (let i = 0; i < ROUNDS; i++) paced.push(await directPaced(client));
  await using against = AGAINST
    ? await connectStdio(ws, { command: join(AGAINST, "bin", "pml") })
    : undefined;
  if (against) { for (let i = 0; i < WARMUP_ROUNDS; i++) await warmUpOnce(against); }
  paused = await pausedCompare(against ? [client, against] : [client]);
}

async function warmUpOnce(client: Client): Promise<void> {
  await direct(client);
  await viaExecute(client);
}
let memory: [number[], number[], number[]];
{
  await using g = await gatewayFor(ws, { prewarm: true });
  memory = await compare(g.client);
}

// Sandbox start: warm (spawned, ready and warmed up) vs cold (spawned now).
const pool = new ExecSandboxPool(execSandboxSpec());
const warm: number[] = [];
const cold: number[] = [];
const runOne = async (take: () => ReturnType<ExecSandboxPool["take"]>, into: number[]) => {
  const t0 = performance.now();
  const proc = take();
  await proc.call({ ns: "exec", action: "run", args: { code: "return 1" }, workspace: ws.dir });
  into.push(performance.now() - t0);
  await proc.close();
};
pool.prewarm();
for (let i = 0; i < SANDBOX_ROUNDS; i++) {
  for (const [take, into] of [[() => pool.take(), warm], [() => pool.takeCold(), cold]] as const) {
    await pool.warmedUp(); // the cold start does not compete with the next warm one's start
    await settle();
    await runOne(take, into);
  }
}
await pool.close();

console.log(`execute bench: ${ROUNDS} rounds per transport, ${SETTLE_MS} ms pause between calls`);
console.log("through a spawned `pml stdio`:");
console.log(row("  3 direct tools/call filesystem__read_file", stdio[0]));
console.log(row("  pml:execute with the same 3 mcp.* calls", stdio[1], stdio[0]));
console.log(row("  pml:execute, the 3 reads as files.map(…)", stdio[2], stdio[0]));
console.log(row("  3 direct calls, one per agent turn", paced));
console.log(row("  pml:execute vs one call per agent turn", stdio[1], paced));
console.log(`through a spawned \`pml stdio\`, each after a pause of ${PAUSE_MS} ms:`);
console.log(row("  3 direct tools/call filesystem__read_file", paused[0][0]));
console.log(row("  pml:execute with the same 3 mcp.* calls", paused[0][1], paused[0][0]));
if (paused[1]) {
  console.log(`  the same, through ${AGAINST}:`);
  console.log(row("  3 direct tools/call filesystem__read_file", paused[1][0]));
  console.log(row("  pml:execute with the same 3 mcp.* calls", paused[1][1], paused[1][0]));
}
console.log("in process (in-memory transport):");
console.log(row("  3 direct tools/call filesystem__read_file", memory[0]));
console.log(row("  pml:execute with the same 3 mcp.* calls", memory[1], memory[0]));
console.log(row("  pml:execute, the 3 reads as files.map(…)", memory[2], memory[0]));
console.log(row("exec sandbox cold: spawn → `return 1`", cold));
console.log(row("exec sandbox warm: take → `return 1`", warm, cold));
const gain = median(stdio[0]) - median(stdio[1]);
console.log(
  `  over stdio, pml:execute is ${Math.abs(gain).toFixed(2)} ms ${
    gain >= 0 ? "faster" : "slower"
  } than the 3 direct calls`,
);
figure({
  id: "1-execute",
  what: "`pml:execute` of 3 local `read_file` vs the same 3 calls through `pml stdio`",
  now: `${ratio(median(stdio[1]), median(stdio[0]))} (${fmtMs(median(stdio[1]))} vs ${
    fmtMs(median(stdio[0]))
  })`,
  target: "≤ 1.0×",
  met: median(stdio[1]) <= median(stdio[0]),
  bench: "execute",
});
figure({
  id: "1b-execute-paused",
  what:
    `\`pml:execute\` of 3 local \`read_file\` vs the same 3 calls, each after a ${PAUSE_MS} ms pause`,
  now: `${ratio(median(paused[0][1]), median(paused[0][0]))} (${fmtMs(median(paused[0][1]))} vs ${
    fmtMs(median(paused[0][0]))
  })`,
  target: "≤ 1.0×",
  met: median(paused[0][1]) <= median(paused[0][0]),
  bench: "execute",
});
