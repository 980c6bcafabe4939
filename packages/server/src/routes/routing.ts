/**
 * `GET /api/routing`: the platform routing table, byte for byte, with an ETag (DESIGN §6).
 *
 * @module
 */
import { etagMatches } from "../http.ts";
import type { RoutingTable } from "../registry/routing_table.ts";

/** Serves `table.bytes`, or 304 when `If-None-Match` names its ETag. */
export function serveRouting(request: Request, table: RoutingTable): Response {
  const etag = `"${table.sha256}"`;
  const headers = new Headers({ etag, "cache-control": "public, max-age=300" });
  if (etagMatches(request.headers.get("if-none-match"), etag)) {
    return new Response(null, { status: 304, headers });
  }
  headers.set("content-type", "application/json");
  const body = request.method === "HEAD" ? null : table.bytes;
  return new Response(body as BodyInit | null, { status: 200, headers });
}
