/**
 * `@casys/pml-server`: the self-hostable PML registry and API server.
 *
 * @example
 * ```ts
 * import { createApp, loadRoutingTable, SqliteStore } from "@casys/pml-server";
 * const store = new SqliteStore(":memory:");
 * await store.migrate();
 * const app = createApp({ store, routing: await loadRoutingTable("registry/routing.json") });
 * Deno.serve(app);
 * ```
 *
 * @module
 */
export { type App, type AppDeps, createApp, MAX_BODY_BYTES } from "./src/app.ts";
export type { McpHandler, McpRequestContext } from "./src/routes/mcp_post.ts";
export { createMcpHandler, type McpHandlerDeps } from "./src/mcp/mcp_handler.ts";
export type {
  ApiKeyRecord,
  CatalogPage,
  CatalogQuery,
  EntryOrigin,
  EntrySummary,
  EntryType,
  RegistryEntry,
  Routing,
  Store,
} from "./src/store/store.ts";
export { SqliteStore } from "./src/store/sqlite_store.ts";
export { PostgresStore, type PostgresStoreOptions } from "./src/store/postgres_store.ts";
export { openStore, type StoreConfig } from "./src/store/open_store.ts";
export { seedRegistry, type SeedResult } from "./src/registry/seed.ts";
export {
  loadRoutingTable,
  parseRoutingTable,
  routeNamespace,
  routeTools,
  type RoutingTable,
} from "./src/registry/routing_table.ts";
export { fqdnWithHash, type ParsedFqdn, parseFqdn } from "./src/registry/fqdn.ts";
export { authenticate, createApiKey, type CreatedApiKey } from "./src/auth/keys.ts";
export { HttpError } from "./src/http.ts";
export { StoreUnavailableError } from "./src/store/unavailable.ts";
