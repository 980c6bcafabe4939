/**
 * How a `tools/call` that PML sends itself, around the SDK's `Client.request`
 * (`cloud/call_post.ts`, `upstream/transport_calls.ts`), fails: with the errors the SDK's
 * `Protocol.request` would have thrown, so that callers cannot tell the two paths apart.
 *
 * A JSON-RPC error answer becomes `McpError.fromError(code, message, data)`, not
 * `new McpError(…)`: `fromError` is what the SDK does with an error response, and it turns
 * `UrlElicitationRequired` (-32042) with its `elicitations` into the SDK's
 * `UrlElicitationRequiredError`, which `new McpError` would lose (for every other code the two
 * are the same).
 */
import {
  type ElicitRequestURLParams,
  ElicitRequestURLParamsSchema,
  ErrorCode,
  McpError,
  UrlElicitationRequiredError,
} from "../sdk/types.ts";

/** A JSON-RPC error answer to a call, as the error the call throws (the SDK's own mapping). */
export function answerError(error: { code: number; message: string; data?: unknown }): McpError {
  return McpError.fromError(error.code, error.message, error.data);
}

/**
 * True for the error of a call whose server asks the user to open a URL first (-32042, to sign in
 * for example): the gateway passes it on to the agent as it is (`passedOn`), its URL with it,
 * instead of folding it into an `isError` result that would lose both.
 */
export function asksToOpenUrl(error: unknown): error is UrlElicitationRequiredError {
  return error instanceof UrlElicitationRequiredError;
}

/**
 * The sign-in request `error` to pass on to an agent: its URL elicitations (each one's `mode`,
 * `elicitationId`, `url` and `message`, nothing else) and its message, `scrub` applied to each
 * text (to take out the keys the call carried). `undefined` when they are not all URL elicitations
 * (the SDK's schema) of an `http:` or `https:` URL ({@link NOT_URL_ELICITATIONS}): a sign-in page
 * is a web page, and such a request is not passed on.
 */
export function openUrlError(
  error: UrlElicitationRequiredError,
  scrub: (text: string) => string,
): UrlElicitationRequiredError | undefined {
  const elicitations: unknown = error.elicitations;
  if (!Array.isArray(elicitations) || elicitations.length === 0) return undefined;
  const out: ElicitRequestURLParams[] = [];
  for (const elicitation of elicitations) {
    const parsed = ElicitRequestURLParamsSchema.safeParse(elicitation);
    if (!parsed.success) return undefined;
    const { protocol } = new URL(parsed.data.url);
    if (protocol !== "http:" && protocol !== "https:") return undefined;
    out.push({
      mode: "url",
      elicitationId: scrub(parsed.data.elicitationId),
      url: scrub(parsed.data.url),
      message: scrub(parsed.data.message),
    });
  }
  return new UrlElicitationRequiredError(out, scrub(bareMessage(error)));
}

/** Why {@link openUrlError} passed a sign-in request on as an ordinary failure. */
export const NOT_URL_ELICITATIONS = "its elicitations are not all URL elicitations of an http: " +
  "or https: URL, so it is not passed on as a sign-in request";

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
 * What a request handler throws to pass `error` on to its own client: a plain `Error` with the
 * {@link bareMessage}, the code and the data. The SDK's protocol layer answers with a thrown
 * error's `message`, `code` and `data` as they are, and the client prefixes the message when it
 * turns the answer into its `McpError` (its `UrlElicitationRequiredError` for -32042): an
 * `McpError` thrown as it is would arrive prefixed once more.
 */
export function passedOn(error: McpError): Error & { code: number; data: unknown } {
  return Object.assign(new Error(bareMessage(error)), { code: error.code, data: error.data });
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
