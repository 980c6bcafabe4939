import { Client } from "../../sdk/client.ts";
import { lazySchemaValidator } from "../../sdk/validation.ts";
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
import type { LaunchSpec } from "../../deps/launch.ts";
import { PmlError } from "../../errors.ts";
import { ChildCalls } from "./child_call.ts";
import { ChildTransport, type ExitInfo, NotDeliveredError } from "./child_transport.ts";
import { startFailureMessage } from "./start_failure.ts";

/** Options of one call to a running server. */
export interface ServerCallOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly onprogress?: (p: { progress: number; total?: number; message?: string }) => void;
  /** Answers a `sampling/createMessage` the server sends while this call runs. */
  readonly sample?: ServerSample;
  /**
   * Checks the server before the first call on this process (the rug-pull guard reads its own
   * `tools/list` through `listTools`); a rejection fails the call and the check runs again on the
   * next one.
   */
  readonly verify?: (listTools: () => Promise<readonly Tool[]>) => Promise<void>;
}

/** Progress of a sampling request, as the model's side reports it. */
export type SampleProgress = (p: { progress: number; total?: number; message?: string }) => void;

/**
 * Answers one sampling request of the server (its cancellation arrives as `signal`; `onprogress`
 * is present when the server asked for progress with a token).
 */
export type ServerSample = (
  params: CreateMessageRequest["params"],
  signal: AbortSignal,
  onprogress?: SampleProgress,
) => Promise<CreateMessageResult>;

/** The request without its progress token (the next hop gets its own), all else unchanged. */
function withoutProgressToken(
  params: CreateMessageRequest["params"],
): CreateMessageRequest["params"] {
  if (params._meta?.progressToken === undefined) return params;
  const { progressToken: _token, ...meta } = params._meta;
  const { _meta, ...rest } = params;
  return Object.keys(meta).length ? { ...rest, _meta: meta } : rest;
}

/** Signals by number, for exit codes 128 + n (what bubblewrap reports when its child was killed). */
const SIGNALS: Record<number, string> = {
  2: "SIGINT",
  6: "SIGABRT",
  9: "SIGKILL",
  11: "SIGSEGV",
  15: "SIGTERM",
};

function describeExit(exit: ExitInfo): string {
  if (exit.signal) return `was killed by ${exit.signal}`;
  const signal = exit.code > 128 ? SIGNALS[exit.code - 128] : undefined;
  return signal ? `was killed by ${signal}` : `exited with code ${exit.code}`;
}

/**
 * One running stdio MCP server: a child process and an SDK `Client` over it (handshake, `tools/list`,
 * the server's sampling requests); tool calls go on the same transport through {@link ChildCalls}.
 * Concurrent calls share the process, multiplexed by JSON-RPC id.
 */
export class ServerProcess {
  readonly spec: LaunchSpec;
  readonly #transport: ChildTransport;
  readonly #client: Client;
  /** `tools/call` on the transport without the SDK's protocol layer (child_call.ts). */
  readonly #calls: ChildCalls;
  #inFlight = 0;
  /** The sampling handlers of the calls in flight, oldest first. */
  readonly #samplers = new Set<ServerSample>();
  #verified?: Promise<void>;
  /** {@link ServerProcess.#verified} has resolved. */
  #verifiedOk = false;

  private constructor(spec: LaunchSpec, transport: ChildTransport, client: Client) {
    this.spec = spec;
    this.#transport = transport;
    this.#client = client;
    this.#calls = new ChildCalls(transport);
  }

  /**
   * Spawns the server and runs the MCP handshake. A server that exits or does not answer
   * `initialize` within `startTimeoutMs` fails with `DEPENDENCY_START_FAILED` (stderr quoted).
   */
  static async start(
    spec: LaunchSpec,
    opts: {
      startTimeoutMs: number;
      onSpawn?: (pid: number) => void;
      onStderr?: (line: string) => void;
    },
  ): Promise<ServerProcess> {
    const transport = new ChildTransport(spec, { onStderr: opts.onStderr });
    const client = new Client(
      { name: "pml", version: "0.1.0" },
      { capabilities: { sampling: { tools: {} } }, jsonSchemaValidator: lazySchemaValidator() },
    );
    // Filled in once the process object exists (the handler needs its calls in flight).
    const started: { process?: ServerProcess } = {};
    // The server's cancellations of its sampling requests. The SDK's own handler ignores request
    // id 0 (it tests the id for truth), and a server's first request has id 0.
    const cancels = new Map<RequestId, AbortController>();
    client.setNotificationHandler(CancelledNotificationSchema, (n) => {
      if (n.params.requestId !== undefined) cancels.get(n.params.requestId)?.abort(n.params.reason);
    });
    client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
      // Over stdio a request carries no link to the call it belongs to: the oldest call in flight
      // that can answer it does (calls of one server share its permission and its MCP).
      const sample = started.process && [...started.process.#samplers][0];
      if (!sample) {
        throw new McpError(
          ErrorCode.InvalidRequest,
          `sampling/createMessage is answered only while a tool call of ${spec.server} runs`,
        );
      }
      const cancel = new AbortController();
      cancels.set(extra.requestId, cancel);
      try {
        // The server's progress token is its own: progress from the model's side is sent back
        // under it (the hop to the client gets a token of PML's).
        const token = request.params._meta?.progressToken;
        const onprogress: SampleProgress | undefined = token === undefined
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
    try {
      await client.connect(transport, { timeout: opts.startTimeoutMs });
    } catch (err) {
      const exit = transport.exit;
      await transport.close(0);
      const why = exit ? describeExit(exit) : (err as Error).message;
      const { message, missing } = startFailureMessage(
        spec.server,
        spec.declared ?? [spec.command, ...spec.args].join(" "),
        why,
        transport.stderrTail(),
      );
      throw new PmlError("DEPENDENCY_START_FAILED", message, {
        cause: err,
        details: { server: spec.server, ...(missing ?? {}) },
      });
    }
    if (transport.pid) opts.onSpawn?.(transport.pid);
    started.process = new ServerProcess(spec, transport, client);
    return started.process;
  }

  get pid(): number {
    return this.#transport.pid!;
  }

  get alive(): boolean {
    return this.#transport.exit === undefined;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** The server's `tools/list` (every page). */
  async listTools(timeoutMs: number): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#client.listTools(cursor ? { cursor } : undefined, {
        timeout: timeoutMs,
      });
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  /**
   * Runs `verify` on this process's tools once; a failed check is tried again next time.
   * `undefined` once it has passed (nothing to wait for).
   */
  verifyOnce(
    verify: (listTools: () => Promise<readonly Tool[]>) => Promise<void>,
    timeoutMs: number,
  ): Promise<void> | undefined {
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

  /** Resolves when the process has exited. */
  get exited(): Promise<ExitInfo> {
    return this.#transport.exited;
  }

  /**
   * Calls tool `action`. A crash during the call fails it with `DEPENDENCY_CRASHED`, no answer
   * within `timeoutMs` with `RPC_TIMEOUT` (the server is told to cancel; the process keeps running).
   */
  async call(
    toolId: string,
    action: string,
    args: Record<string, unknown>,
    opts: ServerCallOptions,
  ): Promise<CallToolResult> {
    if (!this.alive) {
      throw new PmlError(
        "DEPENDENCY_GONE",
        `"${toolId}" was not sent: the ${this.spec.server} server had exited; it will be restarted`,
      );
    }
    this.#inFlight++;
    const sample = opts.sample;
    if (sample) this.#samplers.add(sample);
    try {
      return await this.#calls.call({ name: action, arguments: args }, opts);
    } catch (err) {
      if (err instanceof NotDeliveredError) {
        await this.#settled();
        throw new PmlError(
          "DEPENDENCY_GONE",
          `"${toolId}" was not sent: ${err.message}; it will be restarted`,
          { cause: err },
        );
      }
      const closed = err instanceof McpError && err.code === ErrorCode.ConnectionClosed;
      const exit = this.#transport.exit ?? (closed ? await this.#settled() : undefined);
      if (exit && !exit.requested) {
        const tail = this.#transport.stderrTail();
        throw new PmlError(
          "DEPENDENCY_CRASHED",
          `"${toolId}" failed: the ${this.spec.server} server ${
            describeExit(exit)
          } during the call; ` +
            `it will be restarted on the next call` + (tail ? `\nstderr:\n${tail}` : ""),
          { cause: err },
        );
      }
      if (exit) {
        throw new PmlError(
          "DEPENDENCY_STOPPED",
          `"${toolId}" failed: the ${this.spec.server} server was stopped (PML is shutting down)`,
          { cause: err },
        );
      }
      if (err instanceof McpError && err.code === ErrorCode.RequestTimeout) {
        throw new PmlError(
          "RPC_TIMEOUT",
          `"${toolId}" timed out after ${opts.timeoutMs} ms: the ${this.spec.server} server did not answer`,
          { cause: err },
        );
      }
      throw err;
    } finally {
      this.#inFlight--;
      if (sample) this.#samplers.delete(sample);
    }
  }

  /** Stops the process group (SIGTERM, SIGKILL after `graceMs`). */
  async stop(graceMs = 500): Promise<void> {
    await this.#transport.close(graceMs);
    await this.#client.close().catch(() => {});
  }

  /** After a connection error, gives the exit status a moment to arrive (pipe closed first). */
  async #settled(): Promise<ExitInfo | undefined> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), 200)));
    const exit = await Promise.race([this.#transport.exited.then((e) => e), late]);
    clearTimeout(timer);
    return this.#transport.exit ?? exit;
  }
}
