/**
 * Calls a tool of an `http` registry entry on its remote MCP server (`proxyTo`), on an upstream
 * session of {@link UpstreamSessions} (the SDK `Client` and `StreamableHTTPClientTransport`), with
 * the caller's BYOK key placed as the entry's `byok` field says (for example
 * `Authorization: Bearer <key>`).
 *
 * The key lives in memory only, in the headers of the upstream session opened with it (sessions are
 * per upstream and header set, so no other key's caller uses it), until that session has been idle
 * for a minute: it is never stored, and scrubbed from every message this module returns or logs.
 *
 * An upstream that answers a call with `UrlElicitationRequired` (-32042: the user must open a URL,
 * to sign in for example) gets that error passed on as it is, not an `UPSTREAM_ERROR` result: the
 * same code, its message once prefixed, its `data.elicitations` kept (each one's `mode`,
 * `elicitationId`, `url` and `message`), the key scrubbed from all of them, so that the agent's SDK
 * client throws its `UrlElicitationRequiredError` with the URL to show the user. Only `http:` and
 * `https:` URLs pass; any other sign-in request is an `UPSTREAM_ERROR` saying why.
 *
 * @module
 */
import { redact } from "./byok.ts";
import type { ByokKeys } from "./byok.ts";
import { errorResult } from "./results.ts";
import { type CallToolResult, McpError } from "./sdk/types.ts";
import {
  asksToOpenUrl,
  bareMessage,
  NOT_URL_ELICITATIONS,
  openUrlError,
  passedOn,
} from "../../../pml/src/targets/call_errors.ts";
import type { CatalogTool } from "./tool_catalog.ts";
import type { UpstreamSessions } from "./upstream_sessions.ts";
import type { CallStream } from "./call_stream.ts";

/** What the proxy needs from the server. */
export interface ProxyDeps {
  /** The upstream sessions (one pool per server). */
  readonly sessions: UpstreamSessions;
  /** Where failures are reported (already redacted). */
  readonly log: (line: string) => void;
}

/** The caller of one proxied call: whose it is, its cancellation, its stream. */
export interface ProxyCaller {
  /** The caller's API key id (its upstream sessions are its own). */
  readonly owner?: string;
  readonly signal?: AbortSignal;
  /** What the server sends about the call goes there (`call_stream.ts`). */
  readonly stream?: CallStream;
}

/**
 * The upstream result, or an `isError` result when a key is missing (`API_KEY_REQUIRED`) or the
 * upstream fails (`UPSTREAM_ERROR`).
 *
 * @throws the upstream's `UrlElicitationRequired` error (as `passedOn` gives it), its key
 * scrubbed, when it asks the user to open a URL (see the module's documentation).
 */
export async function proxyToolCall(
  tool: CatalogTool,
  args: Record<string, unknown>,
  keys: ByokKeys,
  deps: ProxyDeps,
  caller: ProxyCaller = {},
): Promise<CallToolResult> {
  const http = tool.http!;
  const missing = tool.envRequired.filter((name) => !keys.has(name));
  if (missing.length > 0) return missingKeyResult(tool.id, missing);
  const headers: Record<string, string> = {};
  if (http.byok) {
    headers[http.byok.header] = http.byok.format.replaceAll("{key}", keys.get(http.byok.env)!);
  }
  try {
    return await deps.sessions.callTool({
      url: http.proxyTo,
      headers,
      name: http.upstreamName,
      args,
      owner: caller.owner,
      signal: caller.signal,
      stream: caller.stream,
    });
  } catch (error) {
    const origin = new URL(http.proxyTo).origin;
    // An MCP error once prefixed: the upstream's SDK sent its own prefix, the client added one.
    const why = error instanceof McpError
      ? `MCP error ${error.code}: ${bareMessage(error)}`
      : (error as Error).message;
    const signIn = asksToOpenUrl(error)
      ? openUrlError(error, (text) => redact(text, keys)) ?? null
      : undefined;
    const refused = signIn === null ? ` (${NOT_URL_ELICITATIONS})` : "";
    const message = redact(
      `Cannot call "${tool.id}" on its MCP server ${origin}: ${why}${refused}`,
      keys,
    );
    deps.log(`pml-server: ${message}`);
    // Passed on with its message bare: the caller's client adds the one prefix.
    if (signIn) throw passedOn(signIn);
    return errorResult("UPSTREAM_ERROR", message, { tool: tool.id });
  }
}

/** The `isError` result naming the missing variables and how to provide them. */
export function missingKeyResult(toolId: string, missing: readonly string[]): CallToolResult {
  const names = missing.map((name) => `"${name}"`).join(", ");
  return errorResult(
    "API_KEY_REQUIRED",
    `Tool "${toolId}" needs the API key ${names}: set ${missing.join(", ")} in the environment ` +
      `of the pml client and list ${
        missing.length > 1 ? "them" : "it"
      } in .pml.json "env" (for example "env": ${JSON.stringify(missing)}); ` +
      `pml sends it to the PML server for this call only (X-PML-BYOK), which never stores it.`,
    { tool: toolId, envRequired: missing },
  );
}
