import type { CallToolResult } from "../../sdk/types.ts";
import { checkToolResult } from "../../sdk/tool_result.ts";
import { CallBounds } from "../call_bounds.ts";
import { answerError, stoppedError, timeoutError } from "../call_errors.ts";
import { ToolResultShape } from "../target.ts";

/** The open MCP session a call is posted on (the SDK client opened it and keeps its ids). */
export interface PostSession {
  readonly url: string;
  readonly sessionId?: string;
  readonly protocolVersion?: string;
  /** The headers every request to the cloud carries (`authorization`, `x-pml-client`). */
  readonly headers: Readonly<Record<string, string>>;
  readonly fetch: typeof fetch;
  /** An HTTP error status, as the SDK's transport reports it (`StreamableHTTPError`). */
  readonly httpError: (status: number, message: string) => Error;
}

/** Options of {@link postToolCall}. */
export interface PostCallOptions {
  /** `X-PML-BYOK` of this call. */
  readonly byok?: string;
  readonly signal?: AbortSignal;
  /** Bound on the call, reset by each progress notification. */
  readonly timeoutMs: number;
  readonly onprogress?: (p: { progress: number; total?: number; message?: string }) => void;
  /**
   * Takes every other message of an SSE answer, in order: the server's notifications and requests
   * about this call (a log line, an elicitation, a sampling request, the cancellation of one).
   * Without it they are skipped, as before.
   */
  readonly onmessage?: (message: StreamMessage) => void;
  /** Checks the result (default {@link checkedOrShaped}); what it throws, the call throws. */
  readonly resultSchema?: { parse(value: unknown): unknown };
}

/** A JSON-RPC message of a call's SSE answer other than its answer and its own progress. */
export type StreamMessage = Record<string, unknown> & { readonly jsonrpc: "2.0" };

let lastId = 0;

/**
 * One `tools/call` as one POST on an open Streamable HTTP session, read as the SDK's client
 * would: a JSON answer or an SSE stream (progress, then the answer), the result checked by
 * {@link checkedOrShaped} (or `opts.resultSchema`), a JSON-RPC error thrown as the SDK would
 * (`call_errors.ts`), an HTTP error as `session.httpError`, the timeout or the signal as an
 * `McpError` (`RequestTimeout`) after `notifications/cancelled` is sent. The SDK's
 * `Client.request` costs ~150 µs of CPU more per call (its protocol layer, a message schema and
 * two header copies; docs/speed.md).
 *
 * Resolves to `undefined`, having sent nothing the server ran, when the POST was redirected: the
 * caller sends it through the SDK, which follows redirects within the origin.
 */
export async function postToolCall(
  session: PostSession,
  params: { name: string; arguments: Record<string, unknown> },
  opts: PostCallOptions,
): Promise<CallToolResult | undefined> {
  opts.signal?.throwIfAborted();
  const id = `pml-${++lastId}`; // apart from the SDK client's numeric ids in the same session
  const headers: Record<string, string> = {
    ...session.headers,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  };
  if (session.sessionId) headers["mcp-session-id"] = session.sessionId;
  if (session.protocolVersion) headers["mcp-protocol-version"] = session.protocolVersion;
  const body = JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: opts.onprogress ? { ...params, _meta: { progressToken: id } } : params,
  });

  const stop = new AbortController();
  const bound = bounds.start(opts.timeoutMs, () => stop.abort(timeoutError(opts.timeoutMs)));
  const onAbort = () => stop.abort(opts.signal!.reason);
  // No options object: Deno converts one on every call; the `finally` below removes it.
  opts.signal?.addEventListener("abort", onAbort);
  try {
    const response = await session.fetch(session.url, {
      method: "POST",
      headers: opts.byok ? { ...headers, "x-pml-byok": opts.byok } : headers,
      body,
      signal: stop.signal,
      redirect: "manual",
    });
    if (response.status >= 300 && response.status < 400 || response.type === "opaqueredirect") {
      await response.body?.cancel();
      return undefined;
    }
    if (!response.ok) {
      const text = await response.text().catch(() => "");
      throw session.httpError(response.status, `Error POSTing to endpoint: ${text}`);
    }
    const type = response.headers.get("content-type") ?? "";
    const answer = type.startsWith("text/event-stream")
      ? await fromStream(response.body!, id, () => {
        bounds.reset(bound);
        return opts.onprogress;
      }, opts.onmessage)
      : type.startsWith("application/json")
      ? answerOf(await response.json(), id)
      : undefined;
    if (!answer) {
      await response.body?.cancel().catch(() => {});
      throw new Error(`its answer to tools/call held no response to it (content type "${type}")`);
    }
    if ("error" in answer) throw answerError(answer.error);
    return (opts.resultSchema ?? checkedOrShaped).parse(answer.result) as CallToolResult;
  } catch (err) {
    if (!stop.signal.aborted) throw err;
    const reason = stop.signal.reason;
    void session.fetch(session.url, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: id, reason: String(reason) },
      }),
    }).then((r) => r.body?.cancel(), () => {});
    throw stoppedError(reason);
  } finally {
    bounds.end(bound);
    opts.signal?.removeEventListener("abort", onAbort);
  }
}

const bounds = new CallBounds();

/**
 * The default check of a result: against the SDK's whole `CallToolResultSchema`, once, here
 * (`sdk/tool_result.ts`: the gateway's MCP server sends that object on without parsing it again);
 * a result that does not conform is passed on checked only for `content` ({@link ToolResultShape}),
 * and the gateway's MCP server refuses it with the SDK's own error, as it did before.
 */
const checkedOrShaped = {
  parse: (value: unknown): unknown => checkToolResult(value) ?? ToolResultShape.parse(value),
};

type Answer = { result: unknown } | { error: { code: number; message: string; data?: unknown } };

/** The response to `id` among the JSON-RPC messages of `body`, if one is well formed. */
function answerOf(body: unknown, id: string): Answer | undefined {
  for (const raw of Array.isArray(body) ? body : [body]) {
    const m = raw as Partial<Record<"jsonrpc" | "id" | "result", unknown>> & {
      error?: { code?: unknown; message?: unknown; data?: unknown };
    };
    if (typeof m !== "object" || m === null || m.jsonrpc !== "2.0" || m.id !== id) continue;
    if (typeof m.result === "object" && m.result !== null) return { result: m.result };
    const e = m.error;
    if (typeof e?.code === "number" && Number.isInteger(e.code) && typeof e.message === "string") {
      return { error: { code: e.code, message: e.message, data: e.data } };
    }
  }
  return undefined;
}

/**
 * Reads an SSE answer: `notifications/progress` for `id` go to the progress callback (which also
 * resets the bound), any other JSON-RPC message to `onmessage`, and the first well-formed response
 * to `id` ends the read.
 */
async function fromStream(
  body: ReadableStream<Uint8Array>,
  id: string,
  progressed: () => PostCallOptions["onprogress"],
  onmessage: PostCallOptions["onmessage"],
): Promise<Answer | undefined> {
  let buffer = "";
  // A reader and a decoder rather than `pipeThrough(new TextDecoderStream())`: the pipe's stream
  // machinery cost ~0.4 ms of CPU per call (docs/speed.md).
  const reader = body.getReader();
  const decoder = new TextDecoder();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return undefined;
      buffer += decoder.decode(value, { stream: true }).replaceAll("\r\n", "\n");
      let end: number;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event.split("\n").filter((l) => l.startsWith("data:"))
          .map((l) => l.slice(l[5] === " " ? 6 : 5)).join("\n");
        if (!data) continue;
        let message;
        try {
          message = JSON.parse(data);
        } catch {
          continue; // not JSON-RPC: the SDK's client skips it too (after reporting it)
        }
        const answer = answerOf(message, id);
        if (answer) return answer;
        const p = message?.params;
        if (message?.method === "notifications/progress" && p?.progressToken === id) {
          if (typeof p.progress === "number") {
            progressed()?.({ progress: p.progress, total: p.total, message: p.message });
          }
        } else if (onmessage && message?.jsonrpc === "2.0" && !Array.isArray(message)) {
          onmessage(message);
        }
      }
    }
  } finally {
    void reader.cancel().catch(() => {}); // off the answer's path: nothing waits for the close
  }
}
