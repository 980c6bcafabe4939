import {
  type CallToolResult,
  ErrorCode,
  isJSONRPCErrorResponse,
  type JSONRPCMessage,
  McpError,
  ProgressNotificationSchema,
} from "../../sdk/types.ts";
import { checkToolResult } from "../../sdk/tool_result.ts";
import { type Bound, CallBounds } from "../call_bounds.ts";
import { answerError, stoppedError, timeoutError } from "../call_errors.ts";
import { ToolResultShape } from "../target.ts";
import type { Transport } from "../../sdk/transport.ts";

/** The SDK schema of a request's result, as {@link TransportCalls.request} checks it. */
export interface ResultSchema<T> {
  safeParse(value: unknown): { success: true; data: T } | { success: false; error: unknown };
}

/** Options of one {@link TransportCalls.call}. */
export interface TransportCallOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly onprogress?: (p: { progress: number; total?: number; message?: string }) => void;
}

interface Pending {
  /** Takes the answer's `result`: resolves with it checked, or rejects. */
  readonly answer: (result: unknown) => void;
  readonly reject: (err: unknown) => void;
  readonly onprogress?: TransportCallOptions["onprogress"];
  /** Its timeout, after `timeoutMs` ({@link TransportCalls.#bounds}). */
  bound?: Bound;
  signal?: AbortSignal;
  onAbort?: () => void;
}

/**
 * The first id of PML's own calls: numeric (every server takes those), within 32 bits, and far
 * from the SDK client's ids on the same transport (it counts from 0 and sends only the handshake,
 * `tools/list` and pings).
 */
const FIRST_ID = 1_000_000_000;

/**
 * `tools/call`, `resources/read` and `prompts/get` sent on an upstream server's transport (a stdio
 * child's pipes, a remote server's HTTP) by PML itself, beside the SDK `Client` of its `UpstreamSession`, which opened the
 * session and still answers the server's own requests (sampling) and notifications.
 * One id and one pending entry per call; the answer is matched by id, its result checked against
 * the SDK's whole `CallToolResultSchema` once, here (`sdk/tool_result.ts`: the gateway's MCP
 * server sends that object on without a second parse; a result that does not conform is passed on
 * as `Client.request` did, checked only for `content`, and the server's own check refuses it as
 * before), a JSON-RPC error thrown as the SDK would (`call_errors.ts`), the timeout or the
 * signal as an `McpError` after `notifications/cancelled` is sent, progress relayed under the
 * call's id as token, and the transport's close failing every pending call with `ConnectionClosed`.
 * A read's or a prompt's result is checked with the SDK's own schema ({@link TransportCalls.request}).
 * `Client.request` costs more per call (docs/speed.md, rows 6a and surface-read). Timeouts share one timer, armed
 * for the earliest deadline (`call_bounds.ts`): a timer set and cleared per call cost ~12 µs of a
 * sequential call.
 */
export class TransportCalls {
  readonly #transport: Transport;
  readonly #pending = new Map<number, Pending>();
  #lastId = FIRST_ID;
  readonly #bounds = new CallBounds();

  /** Takes the transport's handlers over from the SDK client (connected already), passing on what is not ours. */
  constructor(transport: Transport) {
    this.#transport = transport;
    const sdkMessage = transport.onmessage;
    const sdkClose = transport.onclose;
    transport.onmessage = (message, extra) => {
      if (!this.#take(message)) sdkMessage?.(message, extra);
    };
    transport.onclose = () => {
      this.#closeAll();
      sdkClose?.();
    };
  }

  call(
    params: { name: string; arguments: Record<string, unknown> },
    opts: TransportCallOptions,
  ): Promise<CallToolResult> {
    return new Promise<CallToolResult>((resolve, reject) => {
      const answer = (result: unknown) => {
        const checked = checkToolResult(result);
        if (checked) return resolve(checked);
        const parsed = ToolResultShape.safeParse(result);
        if (parsed.success) resolve(parsed.data as CallToolResult);
        else reject(parsed.error);
      };
      this.#send("tools/call", params, opts, answer, reject);
    });
  }

  /**
   * Sends another request than `tools/call` (`resources/read`, `prompts/get`), its result checked
   * with `schema` as the SDK's `Client.request` checks it (the parsed value, or the schema's error
   * thrown); errors, the bound and the signal as {@link TransportCalls.call}'s.
   */
  request<T>(
    method: string,
    params: Record<string, unknown>,
    schema: ResultSchema<T>,
    opts: TransportCallOptions,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const answer = (result: unknown) => {
        const parsed = schema.safeParse(result);
        if (parsed.success) resolve(parsed.data);
        else reject(parsed.error);
      };
      this.#send(method, params, opts, answer, reject);
    });
  }

  #send(
    method: string,
    params: Record<string, unknown>,
    opts: TransportCallOptions,
    answer: Pending["answer"],
    reject: Pending["reject"],
  ): void {
    const signal = opts.signal;
    // Aborted before it was sent: rejected as an abort in flight is, nothing sent.
    if (signal?.aborted) return reject(stoppedError(signal.reason));
    const id = ++this.#lastId;
    const timeoutMs = opts.timeoutMs;
    const pending: Pending = { answer, reject, onprogress: opts.onprogress };
    if (signal) {
      pending.signal = signal;
      pending.onAbort = () => this.#cancel(id, signal.reason);
      // No options object: Deno converts one on every call (~4 µs); `#settle` removes it.
      signal.addEventListener("abort", pending.onAbort);
    }
    this.#pending.set(id, pending);
    pending.bound = this.#bounds.start(
      timeoutMs,
      () => this.#cancel(id, timeoutError(timeoutMs)),
    );
    this.#transport.send({
      jsonrpc: "2.0",
      id,
      method,
      params: opts.onprogress ? { ...params, _meta: { progressToken: id } } : params,
    }).catch((err) => {
      if (this.#settle(id)) reject(err);
    });
  }

  /** Handles an answer or a progress notification of one of PML's calls; false for anything else. */
  #take(message: JSONRPCMessage): boolean {
    const m = message as Record<string, unknown>;
    if (typeof m.id === "number" && !("method" in m)) {
      const pending = this.#pending.get(m.id);
      if (!pending) return false;
      if ("result" in m) {
        this.#settle(m.id);
        pending.answer(m.result);
        return true;
      }
      if (!isJSONRPCErrorResponse(message)) return false; // the SDK reports it
      this.#settle(m.id);
      pending.reject(answerError(message.error));
      return true;
    }
    if (m.method !== "notifications/progress") return false;
    const token = (m.params as { progressToken?: unknown } | undefined)?.progressToken;
    const pending = typeof token === "number" ? this.#pending.get(token) : undefined;
    if (!pending?.onprogress) return false;
    const parsed = ProgressNotificationSchema.safeParse(message);
    if (!parsed.success) return false; // the SDK reports it
    const { progressToken: _token, ...progress } = parsed.data.params;
    pending.onprogress(progress);
    return true;
  }

  /** Drops a pending call's entry, bound and abort listener; false when it was settled already. */
  #settle(id: number): boolean {
    const pending = this.#pending.get(id);
    if (!pending) return false;
    this.#pending.delete(id);
    if (pending.bound) this.#bounds.end(pending.bound);
    if (pending.onAbort) pending.signal!.removeEventListener("abort", pending.onAbort);
    return true;
  }

  /** Tells the server to cancel a call still pending and rejects it (timeout or abort). */
  #cancel(id: number, reason: unknown): void {
    const pending = this.#pending.get(id);
    if (!pending || !this.#settle(id)) return;
    this.#transport.send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: id, reason: String(reason) },
    }).catch(() => {/* the process is gone: nothing to cancel */});
    pending.reject(stoppedError(reason));
  }

  #closeAll(): void {
    const error = new McpError(ErrorCode.ConnectionClosed, "Connection closed");
    for (const [id, pending] of [...this.#pending]) {
      this.#settle(id);
      pending.reject(error);
    }
  }
}
