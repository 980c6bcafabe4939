import embedded from "../../../../registry/routing.json" with { type: "json" };

/** Where a tool runs: on the user's machine or on the PML server. */
export type Routing = "client" | "server";

/** The platform routing table (DESIGN §6), as published at `GET /api/routing`. */
export interface RoutingTable {
  readonly version: number;
  readonly client: readonly string[];
  readonly server: readonly string[];
  readonly default: Routing;
}

/** The copy of the platform table shipped with the package (fallback when offline). */
export const EMBEDDED_ROUTING: RoutingTable = Object.freeze(embedded as RoutingTable);

/** A resolver built from one table: `routeOf("json:parse")` → `"server"`. */
export interface RoutingResolver {
  readonly table: RoutingTable;
  routeOf(toolId: string): Routing;
  /** `client` if any tool routes to the client (DESIGN §6). */
  resolveRouting(toolsUsed: readonly string[]): Routing;
}

/**
 * Builds a resolver. Unknown namespaces route to `client` (a tool we know nothing about must not
 * receive the user's data on the server).
 *
 * @example
 * ```ts
 * createRoutingResolver().routeOf("filesystem:read_file"); // "client"
 * ```
 */
export function createRoutingResolver(table: RoutingTable = EMBEDDED_ROUTING): RoutingResolver {
  const server = new Set(table.server);
  const client = new Set(table.client);
  const routeOf = (toolId: string): Routing => {
    const ns = toolId.split(":")[0];
    if (client.has(ns)) return "client";
    if (server.has(ns)) return "server";
    return "client";
  };
  return {
    table,
    routeOf,
    resolveRouting: (toolsUsed) =>
      toolsUsed.some((t) => routeOf(t) === "client") ? "client" : "server",
  };
}

/** `resolveRouting` with the embedded table. */
export function resolveRouting(toolsUsed: readonly string[]): Routing {
  return createRoutingResolver().resolveRouting(toolsUsed);
}
