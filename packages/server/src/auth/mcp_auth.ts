/**
 * How the server refuses an MCP client without a valid API key, and what it says to clients that
 * look for OAuth. pml-server authenticates with API keys only (DESIGN §10); it has no OAuth.
 *
 * Standard MCP clients built on the SDK (mcp-remote, the MCP Inspector, the SDK client with an
 * auth provider) answer any HTTP 401 by starting OAuth discovery (`/.well-known/oauth-*`, then
 * dynamic client registration at `POST /register`), and the user then sees "Dynamic Client
 * Registration rejected" instead of why the request was refused. So an MCP request (Streamable
 * HTTP: `Accept: text/event-stream`, a session `GET` or `DELETE`) without a valid key gets **403**
 * with a JSON-RPC error body and no `WWW-Authenticate` challenge: the clients print that body. The
 * OAuth discovery paths answer a 404 that says the same. Publishing and the registry keep their
 * 401.
 *
 * @module
 */
import { HttpError } from "../http.ts";
import type { ApiKeyRecord } from "../store/store.ts";
import type { KeyLookup } from "./recent_keys.ts";
import { authenticate } from "./keys.ts";

/** JSON-RPC error code of a refused key (implementation-defined server error range). */
export const MCP_UNAUTHORIZED = -32001;

const HOW = 'send the header "Authorization: Bearer <key>" (mcp-remote: ' +
  '--header "Authorization:Bearer <key>"; create a key with `pml-server keys create`)';

/** True for a request of the MCP Streamable HTTP protocol (rather than publishing). */
export function isMcpRequest(request: Request): boolean {
  return request.method === "DELETE" ||
    (request.headers.get("accept") ?? "").includes("text/event-stream");
}

/**
 * {@link authenticate} for MCP requests: a missing or unknown key is a 403 whose body is a
 * JSON-RPC error naming what to send (see the module documentation).
 */
export async function authenticateMcp(
  request: Request,
  store: KeyLookup,
): Promise<ApiKeyRecord> {
  try {
    return await authenticate(request, store);
  } catch (error) {
    if (!(error instanceof HttpError) || error.status !== 401) throw error;
    await request.body?.cancel().catch(() => {});
    const message = error.code === "unauthorized"
      ? `Missing API key: ${HOW}`
      : `${error.message}: ${HOW}`;
    throw new HttpError(403, error.code, message, {}, {}, {
      jsonrpc: "2.0",
      id: null,
      error: { code: MCP_UNAUTHORIZED, message, data: { reason: error.code } },
    });
  }
}

/** True for the paths OAuth clients probe: discovery documents and registration. */
export function isOauthPath(path: string): boolean {
  return path.startsWith("/.well-known/oauth-") || path === "/.well-known/openid-configuration" ||
    path === "/register" || path === "/authorize" || path === "/token";
}

/** The 404 of an OAuth path: this server has no OAuth, and how to authenticate instead. */
export function noOauth(method: string, path: string): HttpError {
  return new HttpError(
    404,
    "oauth_not_supported",
    `pml-server does not use OAuth (no ${method} ${
      path.slice(0, 200)
    }): it takes an API key; ${HOW}`,
  );
}
