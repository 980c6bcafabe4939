import { type CallToolResult, ErrorCode, McpError, type Tool } from "../../sdk/types.ts";
import type { LaunchSpec } from "../../deps/launch.ts";
import { PmlError } from "../../errors.ts";
import {
  type UpstreamCallOptions,
  UpstreamSession,
  type VerifyTools,
} from "../upstream/upstream_session.ts";
import type { UpstreamHub } from "../upstream/upstream_hub.ts";
import { ChildTransport, type ExitInfo, NotDeliveredError } from "./child_transport.ts";
import { startFailureMessage } from "./start_failure.ts";

/** Options of one call to a running server (see `UpstreamCallOptions`). */
export type ServerCallOptions = UpstreamCallOptions;

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
 * One running stdio MCP server: a child process and the {@link UpstreamSession} over its pipes.
 * What a failure means for a process (it crashed, it was stopped, it had exited before the call
 * was sent) is said here; the protocol is the session's.
 */
export class ServerProcess {
  readonly spec: LaunchSpec;
  readonly #transport: ChildTransport;
  readonly session: UpstreamSession;

  private constructor(spec: LaunchSpec, transport: ChildTransport, session: UpstreamSession) {
    this.spec = spec;
    this.#transport = transport;
    this.session = session;
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
      hub?: UpstreamHub;
    },
  ): Promise<ServerProcess> {
    const transport = new ChildTransport(spec, { onStderr: opts.onStderr });
    let session: UpstreamSession;
    try {
      session = await UpstreamSession.open(spec.server, transport, {
        timeoutMs: opts.startTimeoutMs,
        hub: opts.hub,
      });
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
    return new ServerProcess(spec, transport, session);
  }

  get pid(): number {
    return this.#transport.pid!;
  }

  get alive(): boolean {
    return this.#transport.exit === undefined;
  }

  get inFlight(): number {
    return this.session.inFlight;
  }

  /** The server's `tools/list` (every page). */
  listTools(timeoutMs: number): Promise<Tool[]> {
    return this.session.listTools(timeoutMs);
  }

  /** See {@link UpstreamSession.verifyOnce}. */
  verifyOnce(verify: VerifyTools, timeoutMs: number): Promise<void> | undefined {
    return this.session.verifyOnce(verify, timeoutMs);
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
    try {
      return await this.session.callTool(action, args, opts);
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
    }
  }

  /** Stops the process group (SIGTERM, SIGKILL after `graceMs`). */
  async stop(graceMs = 500): Promise<void> {
    await this.#transport.close(graceMs);
    await this.session.close();
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
