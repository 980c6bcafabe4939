/**
 * `pml-server serve`: opens the store, seeds the registry, serves `createApp` with `Deno.serve`
 * and shuts down gracefully (in-flight requests finish) on SIGINT or SIGTERM.
 *
 * @module
 */
import { join } from "node:path";
import { createApp } from "../app.ts";
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
    const mcp = createMcpHandler({ store, routing, log: (line) => io.stderr(line) });
    const server = Deno.serve(
      {
        port: config.port,
        hostname: config.hostname,
        onListen: ({ hostname, port }) => {
          const host = hostname.includes(":") ? `[${hostname}]` : hostname;
          io.stdout(`pml-server listening on http://${host}:${port}/`);
        },
      },
      createApp({
        store,
        routing,
        mcp,
      }),
    );
    const stop = () => {
      io.stderr("pml-server: shutting down");
      server.shutdown();
    };
    Deno.addSignalListener("SIGINT", stop);
    Deno.addSignalListener("SIGTERM", stop);
    try {
      await server.finished;
    } finally {
      Deno.removeSignalListener("SIGINT", stop);
      Deno.removeSignalListener("SIGTERM", stop);
      await mcp.close();
    }
    return 0;
  } finally {
    await store.close();
  }
}
