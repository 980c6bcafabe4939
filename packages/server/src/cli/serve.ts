/**
 * `pml-server serve`: opens the store, seeds the registry, serves `createApp` with `Deno.serve`
 * behind the {@link HeaderGuard} (unless `PML_HEADER_TIMEOUT_MS=0`) and shuts down gracefully
 * (in-flight requests finish) on SIGINT or SIGTERM.
 *
 * @module
 */
import { join } from "node:path";
import { createApp } from "../app.ts";
import { HeaderGuard } from "../header_guard.ts";
import { createMcpHandler } from "../mcp/mcp_handler.ts";
import { loadRoutingTable } from "../registry/routing_table.ts";
import { seedRegistry } from "../registry/seed.ts";
import { openStore } from "../store/open_store.ts";
import type { ServerConfig } from "./config.ts";
import type { CliIo } from "./io.ts";

/** Runs the server until a signal stops it; resolves with the exit code. */
export async function serveCommand(config: ServerConfig, io: CliIo): Promise<number> {
  const store = await openStore(config);
  try {
    const routing = await loadRoutingTable(join(config.registryDir, "routing.json"));
    const seeded = await seedRegistry(store, { registryDir: config.registryDir, routing });
    io.stderr(
      `pml-server: ${store.kind} store ${
        config.databaseUrl ? "(PML_DATABASE_URL)" : config.dataDir
      }; ` +
        `registry: ${seeded.added.length} added, ${seeded.updated.length} updated, ` +
        `${seeded.removed.length} removed, ${seeded.unchanged} unchanged`,
    );
    const mcp = createMcpHandler({
      store,
      routing,
      log: (line) => io.stderr(line),
      bodyTimeoutMs: config.bodyTimeoutMs,
    });
    const app = createApp({
      store,
      routing,
      mcp,
      bodyTimeoutMs: config.bodyTimeoutMs,
      log: (line) => io.stderr(line),
    });
    const announce = ({ hostname, port }: Deno.NetAddr) => {
      const host = hostname.includes(":") ? `[${hostname}]` : hostname;
      io.stdout(`pml-server listening on http://${host}:${port}/`);
    };
    // Deno.serve has no header timeout: with one, the HeaderGuard takes the public address and
    // relays to Deno.serve on a Unix socket in a private folder (see header_guard.ts).
    const socketDir = config.headerTimeoutMs > 0
      ? await Deno.makeTempDir({ prefix: "pml-server-" })
      : undefined;
    const guard = socketDir
      ? HeaderGuard.listen({
        hostname: config.hostname,
        port: config.port,
        upstreamPath: join(socketDir, "http.sock"),
        headerTimeoutMs: config.headerTimeoutMs,
        log: (line) => io.stderr(line),
      })
      : undefined;
    const server = socketDir
      ? Deno.serve({ transport: "unix", path: join(socketDir, "http.sock"), onListen() {} }, app)
      : Deno.serve({ port: config.port, hostname: config.hostname, onListen: announce }, app);
    if (guard) announce(guard.addr);
    const stop = () => {
      io.stderr("pml-server: shutting down");
      void guard?.close();
      mcp.endStreams(); // a shutdown waits for every response to end, GET streams included
      server.shutdown();
    };
    Deno.addSignalListener("SIGINT", stop);
    Deno.addSignalListener("SIGTERM", stop);
    try {
      await server.finished;
    } finally {
      Deno.removeSignalListener("SIGINT", stop);
      Deno.removeSignalListener("SIGTERM", stop);
      await guard?.close();
      await mcp.close();
      if (socketDir) await Deno.remove(socketDir, { recursive: true }).catch(() => {});
    }
    return 0;
  } finally {
    await store.close();
  }
}
