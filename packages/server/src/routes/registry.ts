/**
 * `GET /mcp/{fqdn}` (DESIGN §7): the module source or metadata of one entry, 302 for a 4-part
 * FQDN, 404 `hash_mismatch` / `not_found`, 304 on a matching `If-None-Match`.
 *
 * @module
 */
import { etagMatches, HttpError, jsonResponse } from "../http.ts";
import type { RegistryCache } from "../registry/cache.ts";
import { MAX_FQDN_LENGTH, parseFqdn } from "../registry/fqdn.ts";

/** Serves the entry named by the raw (still percent-encoded) path segment `rawFqdn`. */
export async function serveRegistryEntry(
  request: Request,
  rawFqdn: string,
  cache: RegistryCache,
): Promise<Response> {
  const parsed = parseFqdnOrThrow(rawFqdn);
  const served = await cache.lookup(parsed.name);
  if (!served) {
    throw new HttpError(404, "not_found", `MCP '${parsed.name}' not in registry`);
  }
  if (parsed.hash === undefined) {
    return jsonResponse(302, { fqdn: served.fqdn }, {
      location: `/mcp/${served.fqdn}`,
      "cache-control": "no-cache",
    });
  }
  if (parsed.hash !== served.shortHash) {
    throw new HttpError(
      404,
      "hash_mismatch",
      `Hash '${parsed.hash}' does not match current hash '${served.shortHash}' for ${served.name}`,
      { currentFqdn: served.fqdn },
    );
  }
  const headers = new Headers(served.headers as [string, string][]);
  if (etagMatches(request.headers.get("if-none-match"), served.etag)) {
    headers.delete("content-type");
    return new Response(null, { status: 304, headers });
  }
  const body = request.method === "HEAD" ? null : served.body;
  headers.set("content-length", String(served.body.byteLength));
  return new Response(body as BodyInit | null, { status: 200, headers });
}

function parseFqdnOrThrow(raw: string) {
  if (raw.length > 3 * MAX_FQDN_LENGTH) {
    throw new HttpError(
      400,
      "invalid_fqdn",
      `Invalid FQDN: longer than ${MAX_FQDN_LENGTH} characters`,
    );
  }
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, "invalid_fqdn", `Invalid FQDN "${raw}": bad percent-encoding`);
  }
  try {
    return parseFqdn(decoded);
  } catch (error) {
    throw new HttpError(400, "invalid_fqdn", (error as Error).message);
  }
}
