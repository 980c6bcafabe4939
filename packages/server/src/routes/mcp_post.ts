/**
 * `POST /mcp` serves two things: MCP Streamable HTTP (a JSON-RPC body, `"jsonrpc": "2.0"`, or an
 * `Accept` that includes `text/event-stream`) handled by the injected `mcp` handler, and the
 * publication of a learned capability (any other JSON object). Both require an API key.
 *
 * @module
 */
import { authenticate } from "../auth/keys.ts";
import { authenticateMcp, isMcpRequest } from "../auth/mcp_auth.ts";
import type { KeyLookup } from "../auth/recent_keys.ts";
import { HttpError, parseJsonBody, readBody } from "../http.ts";
import type { ApiKeyRecord, Store } from "../store/store.ts";
import { publishCapability, type PublishDeps } from "./publish.ts";

/** Context the MCP handler receives: the authenticated key and, if already read, the body. */
export interface McpRequestContext {
  readonly apiKey: ApiKeyRecord;
  /** The parsed JSON body when the dispatcher had to read it (pass it to the SDK transport). */
  readonly parsedBody?: unknown;
}

/** Handler of the MCP Streamable HTTP endpoint (`POST`, `GET` and `DELETE /mcp`). */
export type McpHandler = (request: Request, context: McpRequestContext) => Promise<Response>;

/** What the dispatcher needs from the app. */
export interface McpPostDeps extends PublishDeps {
  readonly store: Store;
  /** Where API keys are looked up (the store, or `RecentKeys` in front of it). */
  readonly keys: KeyLookup;
  readonly mcp?: McpHandler;
  readonly maxBodyBytes: number;
  /** How long the body may take to arrive (ms). */
  readonly bodyTimeoutMs: number;
}

/** Authenticates, then routes the request to the MCP handler or to publishing. */
export async function handleMcpPost(request: Request, deps: McpPostDeps): Promise<Response> {
  const apiKey = isMcpRequest(request)
    ? await authenticateMcp(request, deps.keys)
    : await authenticate(request, deps.keys);
  const accept = request.headers.get("accept") ?? "";
  if (deps.mcp && accept.includes("text/event-stream")) return await deps.mcp(request, { apiKey });
  const contentType = request.headers.get("content-type") ?? "";
  if (!/^application\/json\s*(;|$)/i.test(contentType)) {
    await request.body?.cancel();
    throw new HttpError(
      415,
      "unsupported_media_type",
      `Expected Content-Type "application/json", got "${contentType}"`,
    );
  }
  const parsed = parseJsonBody(await readBody(request, deps.maxBodyBytes, deps.bodyTimeoutMs));
  if (!parsed.ok) {
    throw new HttpError(
      400,
      "invalid_json",
      `Request body is not valid JSON: ${parsed.error.message}`,
    );
  }
  const body = parsed.value;
  if (isJsonRpc(body)) {
    if (!deps.mcp) {
      throw new HttpError(501, "mcp_not_enabled", "This server has no MCP endpoint enabled");
    }
    return await deps.mcp(request, { apiKey, parsedBody: body });
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw new HttpError(
      400,
      "invalid_request",
      "Expected a JSON object {org, project, namespace, action, code}",
    );
  }
  return await publishCapability(body, apiKey, deps);
}

function isJsonRpc(body: unknown): boolean {
  const first = Array.isArray(body) ? body[0] : body;
  return typeof first === "object" && first !== null &&
    (first as { jsonrpc?: unknown }).jsonrpc === "2.0";
}
