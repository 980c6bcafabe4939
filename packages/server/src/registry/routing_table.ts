/**
 * The platform routing table (`registry/routing.json`, DESIGN §6): which tool namespaces run on
 * the user's machine (`client`) and which on the server. Served as is by `GET /api/routing`.
 *
 * @module
 */
import { z } from "zod";
import type { Routing } from "../store/store.ts";
import { sha256Hex } from "./hash.ts";

const RoutingFileSchema = z.object({
  version: z.literal(1),
  client: z.array(z.string()),
  server: z.array(z.string()),
  default: z.enum(["client", "server"]),
});

/** The parsed table plus the exact file bytes and their ETag. */
export interface RoutingTable {
  readonly version: 1;
  readonly client: readonly string[];
  readonly server: readonly string[];
  readonly default: Routing;
  /** The bytes `GET /api/routing` serves. */
  readonly bytes: Uint8Array;
  /** Full SHA-256 hex of `bytes`. */
  readonly sha256: string;
}

/**
 * Parses routing table bytes.
 *
 * @throws {TypeError} when the JSON does not have the `{version:1, client, server, default}` shape.
 */
export function parseRoutingTable(
  bytes: Uint8Array,
  source = "routing table",
): RoutingTable {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes));
  } catch (error) {
    throw new TypeError(`Cannot parse ${source}: ${(error as Error).message}`);
  }
  const parsed = RoutingFileSchema.safeParse(json);
  if (!parsed.success) {
    throw new TypeError(`Invalid ${source}: ${z.prettifyError(parsed.error)}`);
  }
  return { ...parsed.data, bytes, sha256: sha256Hex(bytes) };
}

/** Reads and parses `registry/routing.json` (or another file). */
export async function loadRoutingTable(path: string): Promise<RoutingTable> {
  return parseRoutingTable(await Deno.readFile(path), `"${path}"`);
}

/** Routing of one tool namespace; unknown namespaces get the table's default (`client`). */
export function routeNamespace(table: RoutingTable, namespace: string): Routing {
  if (table.client.includes(namespace)) return "client";
  if (table.server.includes(namespace)) return "server";
  return table.default;
}

/** `client` if any of the tool ids (`ns:action`) routes to the client, else `server`. */
export function routeTools(table: RoutingTable, toolIds: readonly string[]): Routing {
  return toolIds.some((id) => routeNamespace(table, id.split(":")[0]) === "client")
    ? "client"
    : "server";
}
