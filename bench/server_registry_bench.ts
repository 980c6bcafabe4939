/**
 * Requests per second of `GET /mcp/{fqdn}` (200 and 304) through `createApp()` behind
 * `Deno.serve`, against a bare `Deno.serve` handler returning the same bytes and headers (the
 * direct baseline), in the same run. 64 concurrent connections on 127.0.0.1; the load comes from
 * a client subprocess (this file with `--client`), so client and server do not share an event
 * loop. Each target is measured in alternating rounds; medians are printed.
 *
 * SQLite always; PostgreSQL too when PML_TEST_DATABASE_URL (or PML_DATABASE_URL) is set (in a
 * throwaway schema).
 *
 * Run: `deno run -A bench/server_registry_bench.ts`
 */
import { join } from "node:path";
import postgres from "postgres";
import { createApp } from "../packages/server/src/app.ts";
import { loadRoutingTable } from "../packages/server/src/registry/routing_table.ts";
import { seedRegistry } from "../packages/server/src/registry/seed.ts";
import { PostgresStore } from "../packages/server/src/store/postgres_store.ts";
import { SqliteStore } from "../packages/server/src/store/sqlite_store.ts";
import type { Store } from "../packages/server/src/store/store.ts";
import { figure } from "./_stats.ts";

const CONCURRENCY = 64;
const SECONDS = 1.5;
const ROUNDS = 3;
const FQDN_NAME = "pml.mcp.memory.server";

if (Deno.args[0] === "--client") {
  await client(Deno.args[1], Deno.args[2] ?? "", Number(Deno.args[3]));
  Deno.exit(0);
}

/** Load loop: CONCURRENCY workers fetch `url` for `seconds`; prints `{ok, errors, rps}`. */
async function client(url: string, ifNoneMatch: string, seconds: number): Promise<void> {
  const expected = ifNoneMatch ? 304 : 200;
  const headers: HeadersInit = ifNoneMatch ? { "if-none-match": ifNoneMatch } : {};
  // Warm the connections first, then count.
  await Promise.all(
    Array.from({ length: CONCURRENCY }, () => fetch(url, { headers }).then((r) => r.arrayBuffer())),
  );
  let ok = 0;
  let errors = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (performance.now() < end) {
      const response = await fetch(url, { headers });
      await response.arrayBuffer();
      if (response.status === expected) ok++;
      else errors++;
    }
  }));
  const elapsed = (performance.now() - start) / 1000;
  console.log(JSON.stringify({ ok, errors, rps: ok / elapsed }));
}

async function load(url: string, ifNoneMatch: string): Promise<number> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--quiet",
      import.meta.filename!,
      "--client",
      url,
      ifNoneMatch,
      String(SECONDS),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!output.success) throw new Error(`bench client failed for ${url}`);
  const result = JSON.parse(new TextDecoder().decode(output.stdout));
  if (result.errors > 0) {
    throw new Error(`bench client got ${result.errors} unexpected statuses from ${url}`);
  }
  return result.rps;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function benchStore(label: string, store: Store): Promise<void> {
  const registryDir = join(import.meta.dirname!, "../registry");
  const routing = await loadRoutingTable(join(registryDir, "routing.json"));
  await seedRegistry(store, { registryDir, routing });
  const app = createApp({ store, routing });
  const appServer = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app);
  const appBase = `http://127.0.0.1:${appServer.addr.port}`;
  const redirect = await fetch(`${appBase}/mcp/${FQDN_NAME}`, { redirect: "manual" });
  await redirect.body?.cancel();
  const path = redirect.headers.get("location")!;
  const reference = await fetch(appBase + path);
  const bytes = new Uint8Array(await reference.arrayBuffer());
  const etag = reference.headers.get("etag")!;
  const headers = [...reference.headers].filter(([name]) =>
    name !== "content-length" && name !== "date"
  );
  // The direct baseline: same bytes and headers, no routing, parsing, cache or store.
  const bare = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    if (request.headers.get("if-none-match") === etag) {
      return new Response(null, {
        status: 304,
        headers: headers.filter(([n]) => n !== "content-type"),
      });
    }
    return new Response(bytes, { headers });
  });
  const bareBase = `http://127.0.0.1:${bare.addr.port}`;
  try {
    for (const [status, tag] of [["200", ""], ["304", etag]] as const) {
      const appRps: number[] = [];
      const bareRps: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        // Alternate the order so both targets see the same machine state on average.
        if (round % 2 === 0) {
          appRps.push(await load(appBase + path, tag));
          bareRps.push(await load(bareBase + path, tag));
        } else {
          bareRps.push(await load(bareBase + path, tag));
          appRps.push(await load(appBase + path, tag));
        }
      }
      const a = median(appRps);
      const b = median(bareRps);
      console.log(
        `  ${label.padEnd(8)} ${status}: pml-server ${
          a.toFixed(0).padStart(6)
        } req/s, bare Deno.serve ` +
          `${b.toFixed(0).padStart(6)} req/s, ratio ${(a / b).toFixed(2)} (target >= 0.50)`,
      );
      figure({
        id: `9b-server-registry-${label}-${status}`,
        what:
          `registry \`GET /mcp/{fqdn}\` (${label}, ${status}), 64 connections, vs bare \`Deno.serve\``,
        now: `${(a / b).toFixed(2)}× (${a.toFixed(0)} vs ${b.toFixed(0)} req/s)`,
        target: "≥ 0.5×",
        met: a >= 0.5 * b,
        bench: "server_registry",
      });
    }
  } finally {
    await appServer.shutdown();
    await bare.shutdown();
  }
}

console.log(
  `server_registry_bench: GET /mcp/${FQDN_NAME}.<hash> on 127.0.0.1, ${CONCURRENCY} concurrent ` +
    `connections from a client subprocess, median of ${ROUNDS} x ${SECONDS} s per target`,
);
const dir = await Deno.makeTempDir({ prefix: "pml-bench-" });
try {
  const sqlite = new SqliteStore(join(dir, "pml-server.db"));
  await sqlite.migrate();
  try {
    await benchStore("sqlite", sqlite);
  } finally {
    await sqlite.close();
  }
  const url = Deno.env.get("PML_TEST_DATABASE_URL") || Deno.env.get("PML_DATABASE_URL");
  if (url) {
    const schema = `pml_bench_${crypto.randomUUID().replaceAll("-", "")}`;
    const admin = postgres(url, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE SCHEMA ${schema}`);
    const pg = new PostgresStore(url, { schema });
    try {
      await pg.migrate();
      await benchStore("postgres", pg);
    } finally {
      await pg.close();
      await admin.unsafe(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
  } else {
    console.log("  postgres: skipped (set PML_TEST_DATABASE_URL, e.g. from scripts/postgres.sh)");
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
