/**
 * How a `tools/call` that PML sends itself, around the SDK's `Client.request`
 * (`cloud/call_post.ts`, `stdio/child_call.ts`), fails: with the errors the SDK's
 * `Protocol.request` would have thrown, so that callers cannot tell the two paths apart.
 *
 * A JSON-RPC error answer becomes `McpError.fromError(code, message, data)`, not
 * `new McpError(…)`: `fromError` is what the SDK does with an error response, and it turns
 * `UrlElicitationRequired` (-32042) with its `elicitations` into the SDK's
 * `UrlElicitationRequiredError`, which `new McpError` would lose (for every other code the two
 * are the same).
 */
import { ErrorCode, McpError } from "../sdk/types.ts";

/** A JSON-RPC error answer to a call, as the error the call throws (the SDK's own mapping). */
export function answerError(error: { code: number; message: string; data?: unknown }): McpError {
  return McpError.fromError(error.code, error.message, error.data);
}

/** The error of a call that outlived its bound of `timeoutMs` (the SDK's, with its `data`). */
export function timeoutError(timeoutMs: number): McpError {
  return McpError.fromError(ErrorCode.RequestTimeout, "Request timed out", { timeout: timeoutMs });
}

/**
 * The message of an `McpError` without the `MCP error <code>: ` prefixes its constructor added:
 * one on the server that threw it (the SDK's `Server` sends that message as it is), and one more
 * on the client that turned the answer back into an `McpError` (the SDK's `Client.request` and
 * {@link answerError} alike). Whoever passes the error on gives this message, so that the next
 * reader's own prefix is the only one.
 */
export function bareMessage(error: McpError): string {
  return error.message.replace(/^(MCP error -?\d+: )+/, "");
}

/**
 * The error a call stopped by its bound or by the caller's signal throws: the reason itself when
 * it is an `McpError` ({@link timeoutError}), else an `McpError` (`RequestTimeout`) quoting it,
 * as the SDK's `Protocol.request` does with an abort reason.
 */
export function stoppedError(reason: unknown): McpError {
  return reason instanceof McpError
    ? reason
    : new McpError(ErrorCode.RequestTimeout, String(reason));
}
