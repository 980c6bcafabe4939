/**
 * The call an agent actually makes: the first one after a pause (the model thinks a few seconds
 * between two calls). `filesystem:read_file` of a 4 KiB file through `pml stdio` after
 * {@link PAUSE_MS} without a message (past its idle collection and the reuse of its sandbox
 * policies' look at the machine), against `@modelcontextprotocol/server-filesystem` called directly
 * after the same pause; warm calls of both in the same rounds for reference.
 *
 * `PAUSE_AGAINST=<another checkout of this repository>` adds that checkout's `bin/pml stdio` as a
 * third side, timed in the same rounds (a before/after comparison on one loaded machine);
 * `PAUSE_ROUNDS` sets the number of pauses (20).
 *
 *   deno run -A bench/pause_bench.ts
 */
import { join } from "node:path";
import { trustContentSync } from "../packages/pml/src/config/trust_store.ts";
import { IDLE_COLLECT_MS } from "../packages/pml/src/sandbox/_idle_gc.ts";
import { HOST_VIEW_REUSE_MS } from "../packages/pml/src/sandbox/host_view.ts";
import { Client } from "../packages/pml/src/sdk/client.ts";
import { StdioClientTransport } from "../packages/pml/src/sdk/stdio_client.ts";
import { figure, fmtMs, median, ratio, timeCalls } from "./_stats.ts";

const ROOT = join(import.meta.dirname!, "..");
const ROUNDS = Number(Deno.env.get("PAUSE_ROUNDS") ?? 20);
const AGAINST = Deno.env.get("PAUSE_AGAINST");
/** An agent's pause: past the idle collection (and the time it takes) and the look's reuse. */
const PAUSE_MS = Math.max(IDLE_COLLECT_MS, HOST_VIEW_REUSE_MS) + 1_000;
/** Warm calls per side and round, after as many to warm up again. */
const WARM_CALLS = 20;

const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-bench-pause-" }));
Deno.mkdirSync(join(ws, ".git"));
Deno.mkdirSync(join(ws, "home"));
Deno.writeTextFileSync(join(ws, "file4k.txt"), "x".repeat(4095) + "\n");
const pmlJson = JSON.stringify({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
Deno.writeTextFileSync(join(ws, ".pml.json"), pmlJson);
trustContentSync(join(ws, "home", ".pml"), ws, pmlJson); // as `pml trust` would
const env = { PATH: Deno.env.get("PATH") ?? "", HOME: join(ws, "home"), PML_WORKSPACE: ws };

/** A side: a server over stdio and one `read_file` call to it. */
async function connect(command: string, args: string[], tool: string, path: string) {
  const transport = new StdioClientTransport({ command, args, cwd: ws, env, stderr: "ignore" });
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(transport);
  await client.listTools();
  const call = async () => {
    const r = await client.callTool({ name: tool, arguments: { path } });
    if (r.isError) throw new Error(`${command}: ${JSON.stringify(r.content)}`);
  };
  return { client, call };
}

const pmlOf = (root: string) =>
  connect(join(root, "bin", "pml"), ["stdio"], "filesystem__read_file", "file4k.txt");
const sides: Record<string, Awaited<ReturnType<typeof connect>>> = {
  pml: await pmlOf(ROOT),
  ...(AGAINST ? { against: await pmlOf(AGAINST) } : {}),
  direct: await connect(
    "node",
    [join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), ws],
    "read_text_file",
    join(ws, "file4k.txt"),
  ),
};
const names = Object.keys(sides);
for (const name of names) await timeCalls(sides[name].call, 300);

const first: Record<string, number[]> = {};
const warm: Record<string, number[]> = {};
for (const name of names) [first[name], warm[name]] = [[], []];
for (let round = 0; round < ROUNDS; round++) {
  // Each side waits the pause and the calls of the sides before it; who goes first, second or
  // last rotates (with a reversal, the middle side was always second: one call after the pause
  // it did not wait alone, ~0.15 ms of advantage here).
  const k = round % names.length;
  const order = [...names.slice(k), ...names.slice(0, k)];
  await new Promise((r) => setTimeout(r, PAUSE_MS));
  for (const name of order) first[name].push(...await timeCalls(sides[name].call, 1));
  for (const name of order) {
    await timeCalls(sides[name].call, WARM_CALLS);
    warm[name].push(...await timeCalls(sides[name].call, WARM_CALLS));
  }
}
for (const name of names) await sides[name].client.close();
await Deno.remove(ws, { recursive: true });

const label = (name: string) =>
  name === "against"
    ? `pml stdio of ${AGAINST}`
    : name === "pml"
    ? "pml stdio"
    : "server-filesystem";
console.log(
  `# read_file 4 KiB, the first call after ${PAUSE_MS} ms without a message, ${ROUNDS} pauses ` +
    `(load average ${Deno.loadavg().map((l) => l.toFixed(1)).join(" ")})`,
);
for (const name of names) {
  console.log(
    `${label(name).padEnd(28)} after the pause ${fmtMs(median(first[name])).padStart(9)} (` +
      `${ratio(median(first[name]), median(first.direct))})  warm ${
        fmtMs(median(warm[name])).padStart(9)
      } (${ratio(median(warm[name]), median(warm.direct))})`,
  );
}
const afterPause = median(first.pml) / median(first.direct);
const warmRatio = median(warm.pml) / median(warm.direct);
figure({
  id: "0b-read-file-after-pause",
  what: `\`filesystem:read_file\` 4 KiB, the first call after ${PAUSE_MS / 1000} s without a ` +
    "message, through `pml stdio` vs server-filesystem direct after the same pause",
  now: `${ratio(median(first.pml), median(first.direct))} (${fmtMs(median(first.pml))} vs ${
    fmtMs(median(first.direct))
  }; warm: ${warmRatio.toFixed(2)}×, ${fmtMs(median(warm.pml))} vs ${fmtMs(median(warm.direct))})`,
  target: "≤ 1.2×",
  met: afterPause <= 1.2,
  bench: "pause",
});
