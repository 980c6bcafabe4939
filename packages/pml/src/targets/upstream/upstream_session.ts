/**
 * One MCP session of `pml` with a server it fronts, whatever reaches it: a stdio child's pipes
 * (`ServerProcess`) or a remote server's HTTP (`connectRemote`). The targets keep only how they
 * start or reach their server; what the protocol carries (the handshake, `tools/list`, `tools/call`,
 * the server's own requests to its client) is here, once (ARCHITECTURE.md, "Upstream sessions").
 *
 * @module
 */
import { Client } from "../../sdk/client.ts";
import { lazySchemaValidator } from "../../sdk/validation.ts";
import type { Transport } from "../../sdk/transport.ts";
import {
  type CallToolResult,
  CancelledNotificationSchema,
  type CreateMessageRequest,
  CreateMessageRequestSchema,
  type CreateMessageResult,
  ErrorCode,
  McpError,
  type RequestId,
  type Tool,
} from "../../sdk/types.ts";
import { isPmlError } from "../../errors.ts";
import type { CallContext } from "../target.ts";
import { TransportCalls } from "./transport_calls.ts";

/** Progress of a request, as the other side reports it. */
export type ProgressReport = (p: { progress: number; total?: number; message?: string }) => void;

/**
 * Answers one sampling request of the server (its cancellation arrives as `signal`; `onprogress`
 * is present when the server asked for progress with a token).
 */
export type ServerSample = (
  params: CreateMessageRequest["params"],
  signal: AbortSignal,
  onprogress?: ProgressReport,
) => Promise<CreateMessageResult>;

/** Checks the server's own tool list (the rug-pull guard, `tool_guard.ts`); rejects on a change. */
export type VerifyTools = (listTools: () => Promise<readonly Tool[]>) => Promise<void>;

/** Options of one call on a session. */
export interface UpstreamCallOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly onprogress?: ProgressReport;
  /** Answers a `sampling/createMessage` the server sends while this call runs. */
  readonly sample?: ServerSample;
  /**
   * Checks the server before the first call on this session; a rejection fails the call and the
   * check runs again on the next one.
   */
  readonly verify?: VerifyTools;
}

/** The request without its progress token (the next hop gets its own), all else unchanged. */
function withoutProgressToken(
  params: CreateMessageRequest["params"],
): CreateMessageRequest["params"] {
  if (params._meta?.progressToken === undefined) return params;
  const { progressToken: _token, ...meta } = params._meta;
  const { _meta, ...rest } = params;
  return Object.keys(meta).length ? { ...rest, _meta: meta } : rest;
}

/**
 * See the module documentation. Concurrent calls share the session, multiplexed by JSON-RPC id;
 * `tools/call` goes on the transport through {@link TransportCalls} (not the SDK's protocol layer,
 * docs/speed.md row 6a), everything else through the SDK `Client`.
 */
export class UpstreamSession {
  /** The namespace of the server (`private_mcps` key, registry name). */
  readonly server: string;
  readonly client: Client;
  readonly #calls: TransportCalls;
  #inFlight = 0;
  /** The sampling handlers of the calls in flight, oldest first. */
  readonly #samplers = new Set<ServerSample>();
  #verified?: Promise<void>;
  /** {@link UpstreamSession.#verified} has resolved. */
  #verifiedOk = false;

  private constructor(server: string, client: Client, transport: Transport) {
    this.server = server;
    this.client = client;
    this.#calls = new TransportCalls(transport);
  }

  /**
   * Runs the MCP handshake on `transport` and returns the session. Rejects as the SDK does (the
   * caller says what failed: a process that did not start, a URL not reached); the transport is
   * left to the caller to close.
   */
  static async open(
    server: string,
    transport: Transport,
    opts: { timeoutMs: number },
  ): Promise<UpstreamSession> {
    const client = new Client(
      { name: "pml", version: "0.1.0" },
      { capabilities: { sampling: { tools: {} } }, jsonSchemaValidator: lazySchemaValidator() },
    );
    // Filled in once the session object exists (the handlers need its calls in flight).
    const opened: { session?: UpstreamSession } = {};
    answerSampling(client, server, () => opened.session && [...opened.session.#samplers][0]);
    await client.connect(transport, { timeout: opts.timeoutMs });
    opened.session = new UpstreamSession(server, client, transport);
    return opened.session;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** The server's `tools/list` (every page), definitions as it gave them. */
  async listTools(timeoutMs: number): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.client.listTools(cursor ? { cursor } : undefined, {
        timeout: timeoutMs,
      });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  /**
   * Runs `verify` on this session's tools once; a failed check is tried again next time.
   * `undefined` once it has passed (nothing to wait for).
   */
  verifyOnce(verify: VerifyTools, timeoutMs: number): Promise<void> | undefined {
    if (this.#verifiedOk) return undefined;
    if (!this.#verified) {
      const verified = verify(() => this.listTools(timeoutMs));
      this.#verified = verified;
      verified.then(
        () => void (this.#verifiedOk = this.#verified === verified),
        () => void (this.#verified = undefined),
      );
    }
    return this.#verified;
  }

  /**
   * Calls tool `name` (verified first when `opts.verify` is given). Fails as the SDK's `Client`
   * would (`call_errors.ts`); the target says what a failure means for its server.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    opts: UpstreamCallOptions,
  ): Promise<CallToolResult> {
    const verifying = opts.verify && this.verifyOnce(opts.verify, opts.timeoutMs);
    if (verifying) await verifying;
    this.#inFlight++;
    const sample = opts.sample;
    if (sample) this.#samplers.add(sample);
    try {
      return await this.#calls.call({ name, arguments: args }, opts);
    } finally {
      this.#inFlight--;
      if (sample) this.#samplers.delete(sample);
    }
  }

  async close(): Promise<void> {
    await this.client.close().catch(() => {});
  }
}

/**
 * The server's `sampling/createMessage`: answered by the oldest call in flight that can (over stdio
 * a request carries no link to the call it belongs to; calls of one server share its permission
 * and its MCP), its cancellation and progress relayed.
 */
function answerSampling(
  client: Client,
  server: string,
  sampler: () => ServerSample | undefined,
): void {
  // The server's cancellations of its sampling requests. The SDK's own handler ignores request
  // id 0 (it tests the id for truth), and a server's first request has id 0.
  const cancels = new Map<RequestId, AbortController>();
  client.setNotificationHandler(CancelledNotificationSchema, (n) => {
    if (n.params.requestId !== undefined) cancels.get(n.params.requestId)?.abort(n.params.reason);
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
    const sample = sampler();
    if (!sample) {
      throw new McpError(
        ErrorCode.InvalidRequest,
        `sampling/createMessage is answered only while a tool call of ${server} runs`,
      );
    }
    const cancel = new AbortController();
    cancels.set(extra.requestId, cancel);
    try {
      // The server's progress token is its own: progress from the model's side is sent back
      // under it (the hop to the client gets a token of PML's).
      const token = request.params._meta?.progressToken;
      const onprogress: ProgressReport | undefined = token === undefined
        ? undefined
        : (p) =>
          void extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, ...p },
          }).catch(() => {});
      const signal = AbortSignal.any([extra.signal, cancel.signal]);
      return await sample(withoutProgressToken(request.params), signal, onprogress);
    } catch (err) {
      if (err instanceof McpError) throw err;
      // A PML refusal (denied, no key, …): the MCP gets it as its request's error.
      throw new McpError(
        isPmlError(err) ? ErrorCode.InvalidRequest : ErrorCode.InternalError,
        (err as Error).message,
      );
    } finally {
      cancels.delete(extra.requestId);
    }
  });
}

/**
 * The options of a call on a session from the target's {@link CallContext}: its bound, signal and
 * progress, and the server's sampling requests answered under `sampling:<server>` with the MCP's
 * `allowedToolPatterns` as the model's tools.
 */
export function upstreamCallOptions(
  server: string,
  ctx: CallContext,
  opts: { timeoutMs: number; allowedToolPatterns: readonly string[]; verify?: VerifyTools },
): UpstreamCallOptions {
  return {
    timeoutMs: opts.timeoutMs,
    signal: ctx.signal,
    onprogress: ctx.progress
      ? (p) => void ctx.progress!(p.progress, p.total, p.message).catch(() => {})
      : undefined,
    sample: ctx.sample
      ? (params, signal, onprogress) =>
        ctx.sample!(server, params, {
          allowedToolPatterns: opts.allowedToolPatterns,
          signal,
          onprogress,
        })
      : undefined,
    verify: opts.verify,
  };
}
