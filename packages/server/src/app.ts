/**
 * `createApp(deps)`: the whole HTTP server as a `(Request) => Promise<Response>` function, so
 * tests call it without a port and `main.ts` hands it to `Deno.serve`.
 *
 * Routes: `GET /` (read-only dashboard page), `GET /health`, `GET /api/routing`, `GET /mcp` (catalog), `GET /mcp/{fqdn}` (registry),
 * `POST /mcp` (publish, or MCP when an `mcp` handler is injected), `GET`/`DELETE /mcp` with an
 * event-stream `Accept` or `Mcp-Session-Id` (MCP handler).
 *
 * @module
 */
import { authenticateMcp, isMcpRequest, isOauthPath, noOauth } from "./auth/mcp_auth.ts";
import { RecentKeys } from "./auth/recent_keys.ts";
import { BODY_TIMEOUT_MS, errorResponse, HttpError, jsonResponse } from "./http.ts";
import { RegistryCache } from "./registry/cache.ts";
import type { RoutingTable } from "./registry/routing_table.ts";
import { serveCatalog } from "./routes/catalog.ts";
import { serveDashboard } from "./routes/dashboard.ts";
import { serveHealth } from "./routes/health.ts";
import { handleMcpPost, type McpHandler } from "./routes/mcp_post.ts";
import { serveRegistryEntry } from "./routes/registry.ts";
import { serveRouting } from "./routes/routing.ts";
import type { Store } from "./store/store.ts";
import { StoreUnavailableError } from "./store/unavailable.ts";
import { throttledLog } from "./throttled_log.ts";

/** Default largest request body (1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Dependencies of {@link createApp}; only `store` and `routing` are required. */
export interface AppDeps {
  readonly store: Store;
  readonly routing: RoutingTable;
  /** MCP Streamable HTTP handler for `/mcp` (added by a later component). */
  readonly mcp?: McpHandler;
  /** Registry cache: trust the cached version for this long (ms, default 1000). */
  readonly cacheTtlMs?: number;
  /** Largest request body accepted (default {@link MAX_BODY_BYTES}). */
  readonly maxBodyBytes?: number;
  /** How long a request body may take to arrive, whole (ms, default 30 000); then 408. */
  readonly bodyTimeoutMs?: number;
  /** Clock in ms since the epoch. */
  readonly now?: () => number;
  /** Where unexpected errors are reported (default `console.error`). */
  readonly logError?: (message: string, error: unknown) => void;
  /**
   * Where an outage of the store and a client's broken request (a body that did not arrive in time
   * or was cut off) are reported, at most one line per 10 s each (default `console.error`).
   */
  readonly log?: (line: string) => void;
}

/** The request handler returned by {@link createApp}. */
export type App = (request: Request) => Promise<Response>;

/**
 * Builds the server's request handler.
 *
 * @example
 * ```ts
 * const app = createApp({ store, routing });
 * const response = await app(new Request("http://pml.test/health"));
 * ```
 */
export function createApp(deps: AppDeps): App {
  const now = deps.now ?? Date.now;
  const cache = new RegistryCache(deps.store, { ttlMs: deps.cacheTtlMs, now });
  const logError = deps.logError ?? ((message, error) => console.error(message, error));
  const keys = new RecentKeys(deps.store, { now });
  const postDeps = {
    store: deps.store,
    keys,
    routing: deps.routing,
    mcp: deps.mcp,
    maxBodyBytes: deps.maxBodyBytes ?? MAX_BODY_BYTES,
    bodyTimeoutMs: deps.bodyTimeoutMs ?? BODY_TIMEOUT_MS,
    now,
    onWrite: () => cache.invalidate(),
  };

  async function route(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const path = url.pathname;
    const method = request.method;
    const read = method === "GET" || method === "HEAD";
    if (path.startsWith("/mcp/")) {
      if (!read) throw methodNotAllowed(method, path, "GET, HEAD");
      return await serveRegistryEntry(request, path.slice("/mcp/".length), cache);
    }
    if (path === "/mcp") {
      if (deps.mcp && isMcpSessionRequest(request)) {
        return await deps.mcp(request, { apiKey: await authenticateMcp(request, keys) });
      }
      if (method === "POST") return await handleMcpPost(request, postDeps);
      if (read) return withoutBodyForHead(method, await serveCatalog(url, deps.store));
      throw methodNotAllowed(method, path, "GET, HEAD, POST");
    }
    if (path === "/api/routing") {
      if (!read) throw methodNotAllowed(method, path, "GET, HEAD");
      return serveRouting(request, deps.routing);
    }
    if (path === "/") {
      if (!read) throw methodNotAllowed(method, path, "GET, HEAD");
      return withoutBodyForHead(method, await serveDashboard(deps.store, deps.routing));
    }
    if (path === "/health") {
      if (!read) throw methodNotAllowed(method, path, "GET, HEAD");
      return withoutBodyForHead(method, await serveHealth(deps.store));
    }
    if (isOauthPath(path)) throw noOauth(method, path);
    throw new HttpError(404, "not_found", `No route for ${method} ${path.slice(0, 200)}`);
  }

  const log = deps.log ?? ((line: string) => console.error(line));
  const storeDown = throttledLog(log, now);
  const clientFault = throttledLog(log, now);
  return async (request) => {
    try {
      return await route(request);
    } catch (error) {
      if (error instanceof HttpError) {
        if (CLIENT_FAULTS.has(error.code)) {
          clientFault(
            `pml-server: client error: ${request.method} ${
              new URL(request.url).pathname.slice(0, 200)
            } answered ${error.status} ${error.code}: ${error.message}`,
          );
        }
        return errorResponse(error);
      }
      if (error instanceof StoreUnavailableError) {
        storeDown(`pml-server: ${error.message}: requests answer 503 store_unavailable`);
        return storeUnavailable(request, error);
      }
      logError(`pml-server: ${request.method} ${new URL(request.url).pathname} failed:`, error);
      return jsonResponse(500, { error: "internal_error", message: "Internal server error" });
    }
  };
}

/**
 * `503 store_unavailable` with `Retry-After: 1`; an MCP request gets the same as a JSON-RPC error
 * (`data.reason`), which MCP clients show.
 */
function storeUnavailable(request: Request, error: StoreUnavailableError): Response {
  const headers = { "retry-after": "1", "cache-control": "no-store" };
  const message = `${error.message}; retry shortly`;
  if (isMcpRequest(request)) {
    return jsonResponse(503, {
      jsonrpc: "2.0",
      id: null,
      error: { code: STORE_UNAVAILABLE_RPC, message, data: { reason: error.code } },
    }, headers);
  }
  return jsonResponse(503, { error: error.code, message }, headers);
}

/** JSON-RPC code of `store_unavailable` (implementation-defined server error range). */
export const STORE_UNAVAILABLE_RPC = -32003;

/**
 * Client errors worth a log line (the client's, never a server `500`): a body that did not arrive
 * in time or was cut off. Other 4xx are ordinary answers.
 */
const CLIENT_FAULTS = new Set(["request_timeout", "incomplete_body"]);

/** `GET` with an event-stream `Accept` (SSE stream) or `DELETE` (session end) belong to MCP. */
function isMcpSessionRequest(request: Request): boolean {
  if (request.method === "DELETE") return true;
  return request.method === "GET" &&
    (request.headers.get("accept") ?? "").includes("text/event-stream");
}

function methodNotAllowed(method: string, path: string, allow: string): HttpError {
  return new HttpError(
    405,
    "method_not_allowed",
    `Method ${method} is not allowed on ${path}`,
    {},
    {
      allow,
    },
  );
}

function withoutBodyForHead(method: string, response: Response): Response {
  if (method !== "HEAD") return response;
  return new Response(null, { status: response.status, headers: response.headers });
}
