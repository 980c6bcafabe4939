/**
 * `filesystem:read_file` of a 4 KiB file over stdio: through `pml stdio` vs
 * `@modelcontextprotocol/server-filesystem` called directly, in the same run. Also spawn → first
 * `tools/list`, four reads of one agent turn one after another against side by side, and resident
 * memory of `pml stdio` with its sandboxes, idle and after 10,000 calls.
 * Then a `shell:exec` round trip (in its bubblewrap sandbox, what it detached looked for after each
 * command) vs spawning the same program directly from Deno.
 *
 *   deno run -A bench/stdio_bench.ts
 */
import { join } from "node:path";
import { trustContentSync } from "../packages/pml/src/config/trust_store.ts";
import { installPacked } from "../packages/pml/scripts/pack.ts";
import { IDLE_COLLECT_MS } from "../packages/pml/src/sandbox/_idle_gc.ts";
import { LEAN_V8_FLAGS } from "../packages/pml/src/sandbox/sandbox_spec.ts";
import { Client } from "../packages/pml/src/sdk/client.ts";
import { StdioClientTransport } from "../packages/pml/src/sdk/stdio_client.ts";
import {
  figure,
  fmtMs,
  median,
  processCpuMs,
  ratio,
  row,
  timeCalls,
  treePssKb,
  treeRssKb,
} from "./_stats.ts";

const ROOT = join(import.meta.dirname!, "..");
const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-bench-" }));
Deno.mkdirSync(join(ws, ".git"));
Deno.mkdirSync(join(ws, "home"));
Deno.writeTextFileSync(join(ws, "file4k.txt"), "x".repeat(4095) + "\n");
const pmlJson = JSON.stringify({
  permissions: { allow: ["filesystem", "shell"], ask: [], deny: [] },
});
Deno.writeTextFileSync(join(ws, ".pml.json"), pmlJson);
trustContentSync(join(ws, "home", ".pml"), ws, pmlJson); // as `pml trust` would
// The published form: `@casys/pml` packed (`deno task pack`) and installed with npm into a fresh
// project (dependencies from the npm cache), run through the `pml` npm links.
const project = Deno.makeTempDirSync({ prefix: "pml-bench-npm-" });
const installed = await installPacked(project);
const env = { PATH: Deno.env.get("PATH") ?? "", HOME: join(ws, "home"), PML_WORKSPACE: ws };
/** The V8 flags `bin/pml` gives `pml stdio`, for the floors below. */
const STDIO_FLAGS = Deno.readTextFileSync(join(ROOT, "bin", "pml")).match(/\*\) v8=(\S+)[ ;]/)?.[1];
if (!STDIO_FLAGS) throw new Error("stdio bench: no V8 flags for `pml stdio` found in bin/pml");
/**
 * The floor of a cold start (docs/speed.md, "Floors"): the SDK's `Server` alone on PML's stdio
 * transport (`bench/_sdk_server.ts`), with `pml stdio`'s V8 flags and its code cache folder, so
 * that its modules are compiled once, as the launcher's are.
 */
const sdkFloor = {
  command: Deno.execPath(),
  args: [
    "run",
    "-A",
    "--quiet",
    "--no-lock",
    `--v8-flags=${STDIO_FLAGS}`,
    "--config",
    join(ROOT, "deno.json"),
    join(ROOT, "bench", "_sdk_server.ts"),
  ],
  env: {
    ...env,
    // bin/pml's folder for these flags: named after them, without dashes, commas as "+".
    DENO_DIR: join(
      ROOT,
      "node_modules",
      ".cache",
      "pml-deno",
      STDIO_FLAGS.replaceAll("--", "").replaceAll(",", "+"),
    ),
    DENO_NO_UPDATE_CHECK: "1",
  },
};

const servers = {
  pml: {
    command: join(ROOT, "bin", "pml"),
    args: ["stdio"],
    tool: "filesystem__read_file",
    path: "file4k.txt",
  },
  bundled: {
    command: installed.bin,
    args: ["stdio"],
    tool: "filesystem__read_file",
    path: "file4k.txt",
  },
  direct: {
    command: "node",
    args: [join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), ws],
    tool: "read_text_file",
    path: join(ws, "file4k.txt"),
  },
};
type Name = keyof typeof servers;

/** Spawns a server and lists its tools: the time that took, and the CPU its process spent. */
async function start(s: { command: string; args: string[]; env?: Record<string, string> }) {
  const transport = new StdioClientTransport({
    command: s.command,
    args: s.args,
    cwd: ws,
    env: s.env ?? env,
    stderr: "ignore",
  });
  const client = new Client({ name: "bench", version: "1" });
  const t0 = performance.now();
  await client.connect(transport);
  await client.listTools();
  const startupMs = performance.now() - t0;
  return { client, transport, startupMs, cpuMs: processCpuMs(transport.pid!) };
}

async function connect(name: Name) {
  const s = servers[name];
  const { client, transport, startupMs, cpuMs } = await start(s);
  const call = async () => {
    const r = await client.callTool({ name: s.tool, arguments: { path: s.path } });
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
  };
  return { client, transport, call, startupMs, cpuMs };
}

console.log("# pml stdio vs @modelcontextprotocol/server-filesystem (direct), read_file 4 KiB");
type Starter = Name | "floor";
const startup: Record<Starter, number[]> = { pml: [], bundled: [], direct: [], floor: [] };
const startCpu: Record<Starter, number[]> = { pml: [], bundled: [], direct: [], floor: [] };
for (let i = 0; i < 7; i++) {
  for (const name of ["pml", "bundled", "direct", "floor"] as const) {
    const c = name === "floor" ? await start(sdkFloor) : await connect(name);
    startup[name].push(c.startupMs);
    startCpu[name].push(c.cpuMs);
    await c.client.close();
  }
}
console.log(row("spawn → first tools/list: pml stdio", startup.pml, startup.direct));
console.log(row("spawn → first tools/list: npm package", startup.bundled, startup.direct));
console.log(row("spawn → first tools/list: server-filesystem", startup.direct));
console.log(row("spawn → first tools/list: the SDK's Server alone", startup.floor));
// A loaded machine stretches every start: the floor measured in the same rounds, and the CPU the
// process spent until its answer (which waiting for a core does not inflate), say what PML adds.
const overFloor = (name: Starter) =>
  `${ratio(median(startup[name]), median(startup.floor))} the SDK's Server alone; CPU ${
    fmtMs(median(startCpu[name]))
  } vs ${fmtMs(median(startCpu.floor))}`;
console.log(`pml stdio: ${overFloor("pml")}; npm package: ${overFloor("bundled")}`);
figure({
  id: "4-cold",
  what: "cold spawn of `pml stdio` → first `tools/list`",
  now: `${fmtMs(median(startup.pml))} (server-filesystem: ${fmtMs(median(startup.direct))}; ${
    overFloor("pml")
  })`,
  target: "< 150 ms",
  met: median(startup.pml) < 150,
  bench: "stdio",
});
figure({
  id: "4b-cold-bundled",
  what:
    "cold spawn of `pml stdio` from the npm package (`npm pack`, installed) → first `tools/list`",
  now: `${fmtMs(median(startup.bundled))} (server-filesystem: ${fmtMs(median(startup.direct))}; ${
    overFloor("bundled")
  })`,
  target: "< 150 ms",
  met: median(startup.bundled) < 150,
  bench: "stdio",
});

const pml = await connect("pml");
const direct = await connect("direct");
await timeCalls(pml.call, 300);
await timeCalls(direct.call, 300);
const lat: Record<"pml" | "direct", number[]> = { pml: [], direct: [] };
for (let round = 0; round < 10; round++) {
  lat.pml.push(...await timeCalls(pml.call, 200));
  lat.direct.push(...await timeCalls(direct.call, 200));
}
console.log(row("read_file 4 KiB: pml stdio", lat.pml, lat.direct));
console.log(row("read_file 4 KiB: server-filesystem direct", lat.direct));
figure({
  id: "0-read-file",
  what: "`filesystem:read_file` 4 KiB through `pml stdio` vs server-filesystem direct",
  now: `${ratio(median(lat.pml), median(lat.direct))} (${fmtMs(median(lat.pml))} vs ${
    fmtMs(median(lat.direct))
  })`,
  target: "(anchor)",
  bench: "stdio",
});
console.log(
  `median overhead of pml: ${((median(lat.pml) - median(lat.direct)) * 1000).toFixed(0)} µs`,
);

// Four reads of one agent turn, from idle (a pause before each turn): one after another, as a
// client sends calls it must not overlap, and side by side, as Claude Code sends the calls of tools
// marked `readOnlyHint` (PML's std reads).
const turns = { serial: [] as number[], parallel: [] as number[] };
for (let round = 0; round < 20; round++) {
  for (const way of round % 2 ? ["serial", "parallel"] as const : ["parallel", "serial"] as const) {
    await new Promise((r) => setTimeout(r, 250));
    const t0 = performance.now();
    if (way === "serial") { for (let i = 0; i < 4; i++) await pml.call(); }
    else await Promise.all([pml.call(), pml.call(), pml.call(), pml.call()]);
    turns[way].push(performance.now() - t0);
  }
}
console.log(row("4 reads in one turn, one after another", turns.serial));
console.log(row("4 reads in one turn, side by side", turns.parallel, turns.serial));

/**
 * How long after its last call a tree counts as idle: past the collection `pml stdio` and its
 * sandboxes run once they have read nothing for {@link IDLE_COLLECT_MS}, with room for a busy
 * machine. Read at exactly 1 s, the figure raced that collection (~8 MB either side of it since
 * `pml stdio` left `--optimize-for-size`), and "after 10,000 calls" read +0.5 or +11.7 MB by luck.
 */
const IDLE_MS = IDLE_COLLECT_MS + 1_500;

/** Tree RSS and PSS of `pid` once idle after the calls so far, and its RSS idle after 10,000 more. */
async function memoryOf(pid: number, call: () => Promise<void>) {
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const idleKb = treeRssKb(pid);
  const idlePssKb = treePssKb(pid);
  await timeCalls(call, 10_000);
  await new Promise((r) => setTimeout(r, IDLE_MS));
  return { idleKb, idlePssKb, afterKb: treeRssKb(pid) };
}

const mb = (kb: number) => (kb / 1024).toFixed(1);

/**
 * The floor of the same tree without PML (docs/speed.md, "Floors"): the SDK's `Server` on PML's
 * stdio transport with the launcher's V8 flags (`bench/_sdk_server.ts`), after its first
 * `tools/list`, plus an idle Deno process with a std sandbox's V8 flags; RSS summed, idle.
 */
async function memoryFloorKb(): Promise<number> {
  const { client, transport } = await start(sdkFloor);
  const idle = new Deno.Command(Deno.execPath(), {
    args: ["eval", `--v8-flags=${LEAN_V8_FLAGS}`, "setInterval(() => {}, 2 ** 30)"],
    stdout: "null",
    stderr: "null",
  }).spawn();
  await new Promise((r) => setTimeout(r, IDLE_MS));
  const kb = treeRssKb(transport.pid!) + treeRssKb(idle.pid);
  idle.kill();
  await idle.status;
  await client.close();
  return kb;
}
const floorKb = await memoryFloorKb();
console.log(
  `RSS floor: the SDK's Server alone plus an idle Deno process: ${mb(floorKb)} MB`,
);

function memoryFigure(id: string, what: string, m: Awaited<ReturnType<typeof memoryOf>>) {
  const idleMb = m.idleKb / 1024;
  const growthMb = (m.afterKb - m.idleKb) / 1024;
  figure({
    id,
    what,
    now: `${idleMb.toFixed(1)} MB idle, ${growthMb >= 0 ? "+" : ""}${growthMb.toFixed(1)} MB ` +
      `after (PSS ${mb(m.idlePssKb)} MB; the SDK's Server alone plus an idle Deno: ${
        mb(floorKb)
      } MB)`,
    target: "≤ 100 MB, flat (≤ +5 MB)",
    met: idleMb <= 100 && growthMb <= 5,
    bench: "stdio",
  });
}

const sources = await memoryOf(pml.transport.pid!, pml.call);
const directKb = treeRssKb(direct.transport.pid!);
console.log(
  `RSS pml stdio + sandboxes: idle ${mb(sources.idleKb)} MB, after 10,000 calls ${
    mb(sources.afterKb)
  } MB (server-filesystem alone: ${mb(directKb)} MB); idle PSS ${
    mb(sources.idlePssKb)
  } MB (shared pages counted once)`,
);
memoryFigure(
  "5-rss",
  "resident memory of `pml stdio` + warm sandboxes, idle and after 10,000 calls",
  sources,
);
// The same for the published form: the npm package runs the bundle (one module without inline
// source maps, where the sources keep each module's transpiled text and map on the V8 heap).
const bundled = await connect("bundled");
await timeCalls(bundled.call, 2_300); // as many as the sources had before their idle figure
const published = await memoryOf(bundled.transport.pid!, bundled.call);
await bundled.client.close();
console.log(
  `RSS npm package + sandboxes: idle ${mb(published.idleKb)} MB, after 10,000 calls ${
    mb(published.afterKb)
  } MB; idle PSS ${mb(published.idlePssKb)} MB`,
);
memoryFigure(
  "5b-rss-bundled",
  "resident memory of `pml stdio` from the npm package + warm sandboxes, idle and after 10,000 calls",
  published,
);
// shell:exec round trip: `true` run without a shell (args given) vs the same spawn done directly.
const shellCall = async () => {
  const r = await pml.client.callTool({
    name: "shell__exec",
    arguments: { command: "true", args: [] },
  });
  if (r.isError) throw new Error(`shell: ${JSON.stringify(r.content)}`);
};
const spawnTrue = async () => {
  const out = await new Deno.Command("true", { stdout: "piped", stderr: "piped" }).output();
  if (!out.success) throw new Error("true failed");
};
await timeCalls(shellCall, 20);
await timeCalls(spawnTrue, 20);
const shellLat: number[] = [];
const spawnLat: number[] = [];
for (let round = 0; round < 5; round++) {
  shellLat.push(...await timeCalls(shellCall, 40));
  spawnLat.push(...await timeCalls(spawnTrue, 40));
}
console.log(row("shell:exec `true`: pml stdio", shellLat, spawnLat));
console.log(row("spawn `true` directly (Deno.Command)", spawnLat));

await pml.client.close();
await direct.client.close();
await Deno.remove(ws, { recursive: true });
await Deno.remove(project, { recursive: true });
