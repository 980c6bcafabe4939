/**
 * PML beside the gateways people use, in one run, in front of the same servers, interleaved round
 * by round (each round times every gateway once, the order rotating), all on loopback:
 *
 * 1. HTTP gateways in front of `@modelcontextprotocol/server-filesystem` over stdio, reading a 4 KiB
 *    file: `pml serve` (its own sandboxed `filesystem:read_file`, and server-filesystem as a stdio
 *    dependency), mcp-proxy, supergateway, mcp-hub; the anchor is an SDK client on
 *    server-filesystem's stdio.
 * 2. Stdio bridges to pml-server's `/mcp` (cloud `json:parse`): `pml stdio`, mcp-remote,
 *    supergateway, and the relay that only parses each message (`_relay.ts cloud`); the anchor is an
 *    SDK client on `/mcp`.
 * 3. pml-server's http MCP proxy: `echo` of server-everything (Streamable HTTP, its own process)
 *    through pml-server's `/mcp` with a BYOK key, against an SDK client on server-everything.
 *    The figure's row runs pml-server in the bench's process; a second row runs
 *    `bin/pml-server serve` in its own process (as deployed), which also gives its CPU per call.
 *
 * Each row: sequential latency (median of the rounds' medians, with the median of the rounds' own
 * ratios to the anchor), throughput with 64 calls in flight on one session (likewise), CPU per call
 * of the gateway's process tree (`/proc/<pid>/stat`, the server it spawned included; the anchor's
 * row is the server alone) and the tree's RSS after the run. Sections 1 and 2 time 5 rounds;
 * section 3 (three contenders, ~8 s a round) times 11, and its sequential calls go one by one in
 * turn through every contender (each round's latency is still each contender's median of 100),
 * for a steadier median of its ratio on a machine whose load moves.
 *
 *   deno run -A bench/peers_bench.ts [http] [cloud] [proxy]   (sections; all by default)
 *   PEERS_SECTIONS=proxy deno task bench peers                (the same through `deno task bench`)
 *   PEERS_ROUNDS=3 …                                          (rounds of every section, to iterate)
 */
import { join } from "node:path";
import type { Client } from "../packages/pml/src/sdk/client.ts";
import { tempWorkspace } from "../packages/pml/src/testing/workspace.ts";
import { waitForLine } from "../packages/pml/src/testing/wait_for_line.ts";
import { startCloud, startUpstream, writeRegistry } from "../tests/e2e/_cloud.ts";
import { spawnServe } from "../tests/e2e/_serve.ts";
import { PML_BIN, pmlEnv } from "../tests/e2e/_spawn.ts";
import { startEverything } from "../packages/server/tests/upstream.ts";
import {
  type HttpGateway,
  mcpHub,
  mcpProxy,
  mcpRemote,
  nodePath,
  overHttp,
  overStdio,
  removePeerHomes,
  ROOT,
  type Running,
  type StdioCommand,
  supergatewayHttp,
  supergatewayStdio,
} from "./_peers.ts";
import { figure, fmtMs, median, treeCpuTicks, treeRssKb } from "./_stats.ts";

const ROUNDS = Number(Deno.env.get("PEERS_ROUNDS") ?? 5);
/** Section 3's rounds: two contenders of a few ms each, so more rounds cost little. */
const PROXY_ROUNDS = Number(Deno.env.get("PEERS_ROUNDS") ?? 11);
const SEQUENTIAL = 100;
const IN_FLIGHT = 64;
const CONCURRENT_TOTAL = 320;
const TICK_MS = 1000 / 100; // USER_HZ
const SECTIONS = Deno.args.length > 0
  ? Deno.args
  : (Deno.env.get("PEERS_SECTIONS") ?? "").split(/[\s,]+/).filter(Boolean);
const want = (section: string) => SECTIONS.length === 0 || SECTIONS.includes(section);

/** One gateway (or the anchor) of a section. */
interface Contender {
  readonly name: string;
  readonly mode: string;
  readonly start: () => Promise<Running>;
  readonly call: (client: Client) => Promise<unknown>;
}

interface Measured {
  readonly name: string;
  readonly mode: string;
  latency: number[];
  throughput: number[];
  ticks: number;
  calls: number;
  rssKb: number;
  hasPid: boolean;
}

function checked(name: string) {
  return (result: unknown) => {
    const r = result as { isError?: boolean; content?: unknown };
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content).slice(-600)}`);
    return r;
  };
}

async function sequential(client: Client, call: Contender["call"]): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < SEQUENTIAL; i++) {
    const t = performance.now();
    await call(client);
    samples.push(performance.now() - t);
  }
  return median(samples);
}

async function concurrent(client: Client, call: Contender["call"]): Promise<number> {
  let next = 0;
  const t = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next++ < CONCURRENT_TOTAL) await call(client);
    }),
  );
  return CONCURRENT_TOTAL / ((performance.now() - t) / 1000);
}

/** Starts every contender, then times them round by round; the first is the anchor. */
/**
 * Sequential latency of every contender with their calls interleaved one by one (call 1 of each,
 * then call 2 of each, …), so that a machine whose load changes from second to second weighs on
 * every contender alike: each contender's median.
 */
async function interleavedSequential(clients: Client[], contenders: Contender[]) {
  const samples: number[][] = contenders.map(() => []);
  for (let n = 0; n < SEQUENTIAL; n++) {
    for (let k = 0; k < contenders.length; k++) {
      const i = (k + n) % contenders.length;
      const t = performance.now();
      await contenders[i].call(clients[i]);
      samples[i].push(performance.now() - t);
    }
  }
  return samples.map(median);
}

async function section(
  title: string,
  contenders: Contender[],
  rounds = ROUNDS,
  { interleaved = false } = {},
): Promise<Measured[]> {
  const running: Running[] = [];
  const results: Measured[] = [];
  try {
    for (const c of contenders) {
      console.error(`peers: starting ${c.name}`);
      const r = await c.start();
      running.push(r);
      for (let i = 0; i < 30; i++) await c.call(r.client); // warm-up
      await concurrent(r.client, c.call);
      results.push({
        name: c.name,
        mode: c.mode,
        latency: [],
        throughput: [],
        ticks: 0,
        calls: 0,
        rssKb: 0,
        hasPid: r.pid !== undefined,
      });
    }
    for (let round = 0; round < rounds; round++) {
      console.error(`peers: ${title.split(":")[0]}, round ${round + 1} of ${rounds}`);
      if (interleaved) {
        const before = running.map((r) => r.pid === undefined ? 0 : treeCpuTicks(r.pid));
        const latencies = await interleavedSequential(running.map((r) => r.client), contenders);
        latencies.forEach((latency, i) => {
          results[i].latency.push(latency);
          const pid = running[i].pid;
          if (pid !== undefined) results[i].ticks += treeCpuTicks(pid) - before[i];
        });
      }
      for (let k = 0; k < contenders.length; k++) {
        const i = (k + round) % contenders.length;
        const { client, pid } = running[i];
        const before = pid === undefined ? 0 : treeCpuTicks(pid);
        if (!interleaved) results[i].latency.push(await sequential(client, contenders[i].call));
        results[i].throughput.push(await concurrent(client, contenders[i].call));
        if (pid !== undefined) results[i].ticks += treeCpuTicks(pid) - before;
        results[i].calls += SEQUENTIAL + CONCURRENT_TOTAL;
      }
    }
    running.forEach((r, i) => results[i].rssKb = r.pid === undefined ? 0 : treeRssKb(r.pid));
  } finally {
    for (const r of running) await r.close().catch(() => {});
  }
  report(title, results, rounds);
  return results;
}

/** Median over rounds of `row / anchor` for one measure. */
function roundRatio(row: number[], anchor: number[]): number {
  return median(row.map((v, i) => v / anchor[i]));
}

const cpuPerCall = (m: Measured) => m.hasPid ? (m.ticks * TICK_MS * 1000) / m.calls : NaN;

function report(title: string, rows: Measured[], rounds: number): void {
  const [anchor] = rows;
  console.log(`\n${title}`);
  console.log(
    `  ${"gateway (mode)".padEnd(62)} ${"latency".padStart(9)} ${"×".padStart(6)} ${
      "calls/s".padStart(8)
    } ${"×".padStart(6)} ${"CPU/call".padStart(9)} ${"RSS".padStart(8)}`,
  );
  for (const m of rows) {
    const cpu = cpuPerCall(m);
    console.log(
      `  ${`${m.name} (${m.mode})`.slice(0, 62).padEnd(62)} ${
        fmtMs(median(m.latency)).padStart(9)
      } ${(roundRatio(m.latency, anchor.latency).toFixed(2) + "×").padStart(6)} ${
        median(m.throughput).toFixed(0).padStart(8)
      } ${(roundRatio(m.throughput, anchor.throughput).toFixed(2) + "×").padStart(6)} ${
        (Number.isNaN(cpu) ? "—" : `${cpu.toFixed(0)} µs`).padStart(9)
      } ${(m.hasPid ? `${(m.rssKb / 1024).toFixed(1)} MB` : "—").padStart(8)}`,
    );
  }
  console.log(
    `  (${rounds} rounds; latency: ${SEQUENTIAL} sequential calls, median; calls/s: ` +
      `${CONCURRENT_TOTAL} calls, ${IN_FLIGHT} in flight on one session; ×: median of the ` +
      `rounds' ratios to the first row; CPU and RSS: the gateway's process tree, its server ` +
      `included; load average ${
        Deno.readTextFileSync("/proc/loadavg").split(" ").slice(0, 3).join(" ")
      })`,
  );
}

/** One figure comparing PML's row with every peer's: latency, throughput and CPU per call. */
function peerFigure(id: string, what: string, rows: Measured[], pmlName: string): void {
  const [anchor] = rows;
  const pml = rows.find((m) => m.name === pmlName)!;
  const peers = rows.filter((m) => m !== anchor && !m.name.startsWith("pml") && m.mode !== "floor");
  const lat = (m: Measured) => roundRatio(m.latency, anchor.latency);
  const thr = (m: Measured) => roundRatio(m.throughput, anchor.throughput);
  const fmt = (m: Measured) =>
    `${m.name} ${lat(m).toFixed(2)}× / ${thr(m).toFixed(2)}× / ${cpuPerCall(m).toFixed(0)} µs`;
  figure({
    id,
    what,
    now: [fmt(pml), ...peers.map(fmt)].join("; "),
    target: "PML leads every peer (latency × / throughput × / CPU per call)",
    met: peers.every((p) =>
      lat(pml) <= lat(p) && thr(pml) >= thr(p) && cpuPerCall(pml) <= cpuPerCall(p)
    ),
    bench: "peers",
  });
}

// ── 1. HTTP gateways in front of server-filesystem ────────────────────────────────────────────
await using ws = tempWorkspace({
  approvals: "agent",
  permissions: { allow: ["filesystem", "fsdep", "json"], ask: [], deny: [] },
});
const FILE = ws.write("file4k.txt", "x".repeat(4095) + "\n");
const FS_SERVER: StdioCommand = {
  command: nodePath(),
  args: [join(ROOT, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), ws.dir],
  env: { PATH: Deno.env.get("PATH") ?? "" },
  cwd: ws.dir,
};
// ws.write trusts the content, as the user's `pml trust` would (docs/permissions.md).
ws.write(
  ".pml.json",
  JSON.stringify({
    approvals: "agent",
    permissions: { allow: ["filesystem", "fsdep", "json"], ask: [], deny: [] },
    private_mcps: {
      fsdep: {
        type: "stdio",
        install: { command: FS_SERVER.command, args: FS_SERVER.args },
        tools: [{
          name: "fsdep:read_text_file",
          inputSchema: { type: "object", properties: { path: { type: "string" } } },
        }],
      },
    },
  }),
);
const readFs = (c: Client) =>
  c.callTool({ name: "read_text_file", arguments: { path: FILE } }).then(checked("read_text_file"));
const readPml = (c: Client) =>
  c.callTool({ name: "filesystem__read_file", arguments: { path: "file4k.txt" } })
    .then(checked("pml filesystem:read_file"));
const readDep = (c: Client) =>
  c.callTool({ name: "fsdep__read_text_file", arguments: { path: FILE } })
    .then(checked("pml fsdep:read_text_file"));
const readHub = (c: Client) =>
  c.callTool({ name: "filesystem__read_text_file", arguments: { path: FILE } })
    .then(checked("mcp-hub"));

/** An HTTP gateway as a contender: the process, then one session of an SDK client. */
function httpContender(gateway: () => Promise<HttpGateway>): () => Promise<Running> {
  return async () => {
    const g = await gateway();
    const client = await overHttp(g.url, {}, g.kind);
    return {
      client,
      pid: g.pid,
      close: async () => {
        await client.close().catch(() => {});
        await g.close();
      },
    };
  };
}

/** `pml serve` in the workspace, and one session; a first dependency use is approved. */
async function pmlServe(env: Record<string, string> = {}): Promise<Running> {
  const serve = await spawnServe(ws, env);
  const client = await overHttp(serve.url);
  return {
    client,
    pid: serve.child.pid,
    close: async () => {
      await client.close().catch(() => {});
      await serve[Symbol.asyncDispose]();
    },
  };
}

/** Answers the dependency approval of the first `fsdep` call (the workspace says approvals: agent). */
async function approveDependency(client: Client): Promise<void> {
  const first = await client.callTool({ name: "fsdep__read_text_file", arguments: { path: FILE } });
  const workflow = (first.structuredContent as { workflow_id?: string } | undefined)?.workflow_id;
  if (workflow) {
    checked("pml:continue")(
      await client.callTool({
        name: "pml__continue",
        arguments: { workflow_id: workflow, decision: "yes" },
      }),
    );
  }
}

if (want("http")) {
  const httpRows = await section(
    "read_file of 4 KiB: HTTP gateways in front of server-filesystem (stdio)",
    [
      {
        name: "server-filesystem direct",
        mode: "SDK client on its stdio",
        start: () => overStdio(FS_SERVER),
        call: readFs,
      },
      {
        name: "pml serve",
        mode: "Streamable HTTP, its own filesystem:read_file in the read sandbox",
        start: () => pmlServe(),
        call: readPml,
      },
      {
        name: "pml serve → dep",
        mode: "Streamable HTTP, server-filesystem as a stdio dependency",
        start: async () => {
          // A raw command's OS sandbox shows the system, HOME and the folders on PATH: the folder
          // holding server-filesystem is put on PATH so that the dependency can read its own code.
          const r = await pmlServe({
            PATH: `${Deno.env.get("PATH")}:${join(ROOT, "node_modules")}`,
          });
          await approveDependency(r.client);
          return r;
        },
        call: readDep,
      },
      {
        name: "mcp-proxy",
        mode: "Streamable HTTP, stateful session",
        start: httpContender(() => mcpProxy(FS_SERVER)),
        call: readFs,
      },
      {
        name: "supergateway",
        mode: "stdio → Streamable HTTP, --stateful",
        start: httpContender(() => supergatewayHttp(FS_SERVER)),
        call: readFs,
      },
      {
        name: "mcp-hub",
        mode: "hub endpoint /mcp, HTTP+SSE",
        start: httpContender(() => mcpHub("filesystem", FS_SERVER)),
        call: readHub,
      },
    ],
  );
  peerFigure(
    "10a-peers-http",
    "`read_file` 4 KiB through HTTP gateways in front of server-filesystem, × an SDK client on its stdio",
    httpRows,
    "pml serve",
  );
}

// ── 2. Stdio bridges to pml-server's /mcp ─────────────────────────────────────────────────────
if (want("cloud")) {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  const CLOUD_MCP = `${cloud.url}/mcp`;
  const AUTH = { Authorization: `Bearer ${cloud.key}` };
  const ARGS = { text: '{"a":[1,2,3],"b":{"c":"d"}}' };
  const parse = (name: string) => (c: Client) =>
    c.callTool({ name, arguments: ARGS }).then(checked(name));
  const bridgeRows = await section("cloud json:parse: stdio bridges to pml-server's /mcp", [
    {
      name: "SDK client direct",
      mode: "Streamable HTTP, in the bench's process",
      start: async () => {
        const client = await overHttp(CLOUD_MCP, AUTH);
        return { client, close: () => client.close() };
      },
      call: parse("json__parse"),
    },
    {
      name: "pml stdio",
      mode: "stdio → CloudTarget (JSON over HTTP)",
      start: () =>
        overStdio({
          command: PML_BIN,
          args: ["stdio"],
          env: pmlEnv(ws, { PML_CLOUD_URL: cloud.url, PML_API_KEY: cloud.key }),
          cwd: ws.dir,
        }),
      call: parse("json:parse"),
    },
    {
      name: "mcp-remote",
      mode: "stdio → Streamable HTTP, --transport http-only",
      start: () => overStdio(mcpRemote(CLOUD_MCP, AUTH)),
      call: parse("json__parse"),
    },
    {
      name: "supergateway",
      mode: "stdio → Streamable HTTP, --streamableHttp",
      start: () => overStdio(supergatewayStdio(CLOUD_MCP, AUTH)),
      call: parse("json__parse"),
    },
    {
      name: "relay",
      mode: "floor",
      start: () =>
        overStdio({
          command: Deno.execPath(),
          args: [
            "run",
            "-A",
            join(import.meta.dirname!, "_relay.ts"),
            "cloud",
            CLOUD_MCP,
            cloud.key,
          ],
          env: { PATH: Deno.env.get("PATH") ?? "" },
        }),
      call: parse("json__parse"),
    },
  ]);
  peerFigure(
    "10b-peers-cloud",
    "cloud `json:parse` through stdio bridges to pml-server's `/mcp`, × an SDK client on `/mcp`",
    bridgeRows,
    "pml stdio",
  );
}

/**
 * `bin/pml-server serve` in a process of its own, as it is deployed (SQLite in a temporary folder,
 * the registry of {@link startCloud} with `upstream` at `base`), and its API key.
 */
async function pmlServerProcess(base: string) {
  const dir = Deno.makeTempDirSync({ prefix: "pml-bench-server-" });
  writeRegistry(join(dir, "registry"), base, { upstream: "/mcp", open: "/mcp" });
  const env = {
    HOME: dir,
    PATH: Deno.env.get("PATH") ?? "",
    PML_DATA_DIR: join(dir, "data"),
    PML_REGISTRY_DIR: join(dir, "registry"),
  };
  const launcher = join(ROOT, "bin/pml-server");
  const keys = await new Deno.Command(launcher, {
    args: ["keys", "create", "--label", "bench"],
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const key = new TextDecoder().decode(keys.stdout).split("\n")[0].trim();
  const child = new Deno.Command(launcher, {
    args: ["serve", "--port", "0"],
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const { match, rest } = await waitForLine(
    child.stdout,
    /pml-server listening on (http:\/\/\S+?)\/?$/m,
    "pml-server serve",
  );
  return {
    url: match[1],
    key,
    pid: child.pid,
    async close() {
      child.kill("SIGTERM");
      await child.status;
      await rest;
      Deno.removeSync(dir, { recursive: true });
    },
  };
}

// ── 3. pml-server's http MCP proxy ────────────────────────────────────────────────────────────
// The upstream is server-everything (Streamable HTTP, its own Node process), registered in
// pml-server as an `http` entry with a BYOK key; pml-server runs in the bench's process, without
// the e2e recorder in front of it (that test aid reads, parses and copies every request: it is
// not pml-server's work).
if (want("proxy")) {
  const everything = await startEverything();
  const base = everything.url.slice(0, -"/mcp".length);
  const proxyCloud = await startCloud(base, { upstream: "/mcp", open: "/mcp" }, { record: false });
  const ownProcess = await pmlServerProcess(base);
  const BYOK = { "X-PML-BYOK": btoa(JSON.stringify({ UPSTREAM_TOKEN: "bench-token" })) };
  const echo = (name: string) => (c: Client) =>
    c.callTool({ name, arguments: { message: "bench" } }).then(checked(name));
  try {
    const [direct, proxied, separate] = await section(
      "echo of server-everything: pml-server's http MCP proxy",
      [
        {
          name: "server-everything direct",
          mode: "SDK client, Streamable HTTP",
          start: async () => {
            const client = await overHttp(everything.url);
            return { client, close: () => client.close() };
          },
          call: echo("echo"),
        },
        {
          name: "pml-server proxy",
          mode: "SDK client → /mcp → one upstream session per key",
          start: async () => {
            const client = await overHttp(`${proxyCloud.url}/mcp`, {
              Authorization: `Bearer ${proxyCloud.key}`,
              ...BYOK,
            });
            return { client, close: () => client.close() };
          },
          call: echo("upstream__echo"),
        },
        {
          name: "pml-server proxy, own process",
          mode: "`bin/pml-server serve`, as deployed",
          start: async () => {
            const client = await overHttp(`${ownProcess.url}/mcp`, {
              Authorization: `Bearer ${ownProcess.key}`,
              ...BYOK,
            });
            return { client, pid: ownProcess.pid, close: () => client.close() };
          },
          call: echo("upstream__echo"),
        },
      ],
      PROXY_ROUNDS,
      { interleaved: true },
    );
    const proxyRatio = roundRatio(proxied.latency, direct.latency);
    figure({
      id: "10c-server-proxy",
      what: "an http MCP's tool through pml-server's proxy (server-everything `echo`) vs direct",
      now:
        `${proxyRatio.toFixed(2)}× (${fmtMs(median(proxied.latency))} vs ${
          fmtMs(median(direct.latency))
        }; throughput ${
          roundRatio(proxied.throughput, direct.throughput).toFixed(2)
        }×; pml-server ` +
        `in its own process: ${roundRatio(separate.latency, direct.latency).toFixed(2)}×, ` +
        `throughput ${roundRatio(separate.throughput, direct.throughput).toFixed(2)}×, ` +
        `${cpuPerCall(separate).toFixed(0)} µs CPU per call)`,
      target: "≤ 1.3×",
      met: proxyRatio <= 1.3,
      bench: "peers",
    });
  } finally {
    await proxyCloud[Symbol.asyncDispose]();
    await ownProcess.close();
    await everything.close();
  }
}
removePeerHomes();
