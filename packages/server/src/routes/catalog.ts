/**
 * `GET /mcp?type=&tool=&q=&page=&limit=`: the paginated catalog (DESIGN §7).
 *
 * @module
 */
import { HttpError, jsonResponse } from "../http.ts";
import { fqdnWithHash } from "../registry/fqdn.ts";
import { ENTRY_TYPES, type EntryType, type Store } from "../store/store.ts";

/** Largest accepted `limit`. */
export const MAX_LIMIT = 100;
/** Default `limit`. */
export const DEFAULT_LIMIT = 50;
/** Largest accepted `page` (keeps offsets small and honest). */
export const MAX_PAGE = 1_000_000;
const MAX_QUERY_LENGTH = 200;
const TOOL_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}:[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** Lists catalog entries matching the query string of `url`. */
export async function serveCatalog(url: URL, store: Store): Promise<Response> {
  const params = url.searchParams;
  const page = positiveInt(params, "page", 1, MAX_PAGE);
  const limit = positiveInt(params, "limit", DEFAULT_LIMIT, MAX_LIMIT);
  const type = single(params, "type");
  if (type !== undefined && !ENTRY_TYPES.includes(type as EntryType)) {
    throw badQuery(`Invalid type "${type}": expected one of ${ENTRY_TYPES.join(", ")}`);
  }
  const tool = single(params, "tool");
  if (tool !== undefined && !TOOL_ID.test(tool)) {
    throw badQuery(`Invalid tool "${tool.slice(0, 80)}": expected a tool id "namespace:action"`);
  }
  const q = single(params, "q")?.trim();
  if (q !== undefined && q.length > MAX_QUERY_LENGTH) {
    throw badQuery(`Invalid q: longer than ${MAX_QUERY_LENGTH} characters`);
  }
  const result = await store.listEntries({
    type: type as EntryType | undefined,
    tool,
    q: q || undefined,
    offset: (page - 1) * limit,
    limit,
  });
  return jsonResponse(200, {
    items: result.items.map((entry) => ({
      fqdn: fqdnWithHash(entry.name, entry.hash),
      type: entry.type,
      routing: entry.routing,
      description: entry.description,
      tools: entry.tools,
    })),
    total: result.total,
    page,
    limit,
  }, { "cache-control": "no-cache" });
}

function single(params: URLSearchParams, name: string): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) throw badQuery(`Parameter "${name}" is given ${values.length} times`);
  return values[0];
}

function positiveInt(params: URLSearchParams, name: string, fallback: number, max: number): number {
  const text = single(params, name);
  if (text === undefined) return fallback;
  const value = /^[0-9]{1,9}$/.test(text) ? Number(text) : NaN;
  if (!(value >= 1 && value <= max)) {
    throw badQuery(`Invalid ${name} "${text.slice(0, 40)}": expected an integer from 1 to ${max}`);
  }
  return value;
}

function badQuery(message: string): HttpError {
  return new HttpError(400, "invalid_query", message);
}
