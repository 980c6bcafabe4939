/**
 * Memory soak of one `pml-server` process: spawns `bin/pml-server serve` (SQLite in a temporary
 * folder, or PostgreSQL in a throwaway schema when `--postgres` is given and PML_TEST_DATABASE_URL
 * is set), then sends a steady mix of calls and prints the server's resident memory (VmRSS of its process) every `--every` seconds.
 *
 * The mix, per round of one caller: an MCP `initialize` (a new session of a client), `tools/list`,
 * `tools/call` of `math:sum` and `pml:search`, a registry read (`GET /mcp/{fqdn}`, 200 then 304),
 * the catalog and `/health`. At the end it prints the first and last samples, the growth between the
 * second sample (after warm-up) and the last, and exits 1 when the memory grew by more than
 * `--max-growth-mb` (default 20) over that span.
 *
 * Run: `deno run -A bench/server_soak.ts` (5 minutes), `--minutes 60` for an hour,
 * `--rate 40` calls per second (default), `--every 15` seconds between samples.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import postgres from "postgres";

const ROOT = join(import.meta.dirname!, "..");

const { values: flags } = parseArgs({
  args: Deno.args,
  options: {
    minutes: { type: "string", default: "5" },
    rate: { type: "string", default: "40" },
    every: { type: "string", default: "15" },
    "max-growth-mb": { type: "string", default: "20" },
    postgres: { type: "boolean", default: false },
  },
});
const minutes = Number(flags.minutes);
const rate = Number(flags.rate);
const every = Number(flags.every);
const maxGrowthMb = Number(flags["max-growth-mb"]);

const dataDir = await Deno.makeTempDir({ prefix: "pml-soak-" });
const env: Record<string, string> = { PML_DATA_DIR: dataDir };
let dropSchema: (() => Promise<void>) | undefined;
const pgUrl = Deno.env.get("PML_TEST_DATABASE_URL");
if (flags.postgres) {
  if (!pgUrl) throw new Error("--postgres needs PML_TEST_DATABASE_URL (scripts/postgres.sh)");
  const schema = `pml_soak_${crypto.randomUUID().replaceAll("-", "")}`;
  const admin = postgres(pgUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE SCHEMA ${schema}`);
  const url = new URL(pgUrl);
  url.searchParams.set("options", `-c search_path=${schema}`);
  env.PML_DATABASE_URL = url.href;
  dropSchema = async () => {
    await admin.unsafe(`DROP SCHEMA ${schema} CASCADE`);
    await admin.end();
  };
}

const bin = join(ROOT, "bin", "pml-server");
const keyOut = await new Deno.Command(bin, { args: ["keys", "create"], env, stdout: "piped" })
  .output();
if (!keyOut.success) throw new Error("pml-server keys create failed");
const key = new TextDecoder().decode(keyOut.stdout).split("\n")[0].trim();

// --trace-gc: V8 prints one line per collection; the live heap after the last full one (what a
// leak grows) is printed next to the resident memory (what the allocator has kept).
const server = new Deno.Command(bin, {
  args: ["serve", "--port", "0"],
  env: { ...env, DENO_V8_FLAGS: "--trace-gc" },
  stdout: "piped",
  stderr: "null",
}).spawn();
let liveHeapMb = NaN;
const base = await listeningUrl(server.stdout, (line) => {
  const full = line.match(/Mark-Compact[^\d]*[\d.]+ \([\d.]+\) -> ([\d.]+) \(/);
  if (full) liveHeapMb = Number(full[1]);
});
const pid = server.pid; // the launcher execs Deno: same process

const mcpHeaders = {
  authorization: `Bearer ${key}`,
  "content-type": "application/json",
  accept: "application/json, text/event-stream",
};
let id = 0;
async function rpc(method: string, params: unknown): Promise<void> {
  const response = await fetch(`${base}mcp`, {
    method: "POST",
    headers: mcpHeaders,
    body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }),
  });
  const body = await response.json();
  if (response.status !== 200 || body.error) {
    throw new Error(`${method} answered ${response.status} ${JSON.stringify(body)}`);
  }
}
async function get(path: string, headers: HeadersInit = {}): Promise<Response> {
  const response = await fetch(`${base}${path}`, { headers });
  await response.arrayBuffer();
  if (response.status >= 400) throw new Error(`GET ${path} answered ${response.status}`);
  return response;
}

/** One round of calls (8 requests). */
async function round(n: number): Promise<void> {
  await rpc("initialize", {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: `soak-${n % 50}`, version: "1" },
  });
  await rpc("tools/list", {});
  await rpc("tools/call", { name: "math:sum", arguments: { numbers: [n, 1, 2] } });
  await rpc("tools/call", { name: "pml:search", arguments: { query: `read file ${n % 7}` } });
  const entry = await get("mcp/pml.mcp.memory.server", {});
  const fqdn = new URL(entry.url).pathname.slice(1);
  await get(fqdn, { "if-none-match": entry.headers.get("etag") ?? "" });
  await get(`mcp?q=${n % 13}&limit=5`);
  await get("health");
}

const samples: { at: number; mb: number; heap: number; calls: number }[] = [];
const start = performance.now();
const end = start + minutes * 60_000;
let calls = 0;
let failures = 0;
const sample = () => {
  const mb = rssMb(pid);
  samples.push({ at: (performance.now() - start) / 1000, mb, heap: liveHeapMb, calls });
  console.log(
    `${((performance.now() - start) / 1000).toFixed(0).padStart(6)} s  ` +
      `${String(calls).padStart(8)} calls  rss ${mb.toFixed(1)} MB  ` +
      `live heap after the last full GC ${liveHeapMb.toFixed(1)} MB`,
  );
};
sample();
let nextSample = start + every * 1000;
const roundsPerSecond = rate / 8;
for (let n = 0; performance.now() < end; n++) {
  const due = start + (n / roundsPerSecond) * 1000;
  const wait = due - performance.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
  try {
    await round(n);
    calls += 8;
  } catch (error) {
    failures++;
    if (failures <= 5) console.error(`round ${n}: ${(error as Error).message}`);
  }
  if (performance.now() >= nextSample) {
    sample();
    nextSample += every * 1000;
  }
}
sample();
server.kill("SIGTERM");
await server.status;
await dropSchema?.();
await Deno.remove(dataDir, { recursive: true });

const warm = samples[Math.min(1, samples.length - 1)];
const last = samples[samples.length - 1];
const growth = last.mb - warm.mb;
console.log(
  `\n${last.calls} calls in ${last.at.toFixed(0)} s (${failures} rounds failed); ` +
    `rss ${samples[0].mb.toFixed(1)} MB at start, ${warm.mb.toFixed(1)} MB after warm-up ` +
    `(${warm.calls} calls), ${last.mb.toFixed(1)} MB at the end: ` +
    `${growth >= 0 ? "+" : ""}${growth.toFixed(1)} MB over ${last.calls - warm.calls} calls; ` +
    `live heap ${warm.heap.toFixed(1)} -> ${last.heap.toFixed(1)} MB`,
);
if (failures > 0 || growth > maxGrowthMb) Deno.exit(1);

/** Resident memory of a process in MB, from /proc. */
function rssMb(pid: number): number {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = Number(status.match(/^VmRSS:\s+(\d+) kB/m)?.[1] ?? NaN);
  return kb / 1024;
}

/** Hands each line of the server's stdout to `onLine`; resolves with its "listening on" URL. */
function listeningUrl(
  stdout: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let rest = "";
    let listening = false;
    stdout.pipeThrough(new TextDecoderStream()).pipeTo(
      new WritableStream({
        write(chunk) {
          const lines = (rest + chunk).split("\n");
          rest = lines.pop()!;
          for (const line of lines) {
            const match = line.match(/listening on (http:\/\/\S+\/)/);
            if (match) {
              listening = true;
              resolve(match[1]);
            } else onLine(line);
          }
        },
        close() {
          if (!listening) reject(new Error("pml-server exited before listening"));
        },
      }),
    ).catch(reject);
  });
}
