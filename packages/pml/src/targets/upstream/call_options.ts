/**
 * The options of one call on an `UpstreamSession`: its bound, cancellation and progress, who
 * answers the server's requests and log lines while it runs (`server_requests.ts`), the check of
 * the server before it, its MCP task and the MCP session of PML's client it is for; and how they
 * are made from a target's {@link CallContext}.
 *
 * @module
 */
import type { Tool } from "../../sdk/types.ts";
import type { CallContext } from "../target.ts";
import type { ProgressReport, ServerElicit, ServerLog, ServerSample } from "./server_requests.ts";
import type { TaskCall } from "./upstream_tasks.ts";

/** Checks the server's own tool list (the rug-pull guard, `tool_guard.ts`); rejects on a change. */
export type VerifyTools = (listTools: () => Promise<readonly Tool[]>) => Promise<void>;

/** Options of one call on a session. */
export interface UpstreamCallOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly onprogress?: ProgressReport;
  /** Answers a `sampling/createMessage` the server sends while this call runs. */
  readonly sample?: ServerSample;
  /** Relays an `elicitation/create` the server sends while this call runs (labelled its). */
  readonly elicit?: ServerElicit;
  /** Relays a log message of the server during this call (on the call's own stream). */
  readonly log?: ServerLog;
  /**
   * Checks the server before the first call on this session (run by the caller, see
   * `UpstreamSession.callTool`); a rejection fails the call and the check runs again on the
   * next one.
   */
  readonly verify?: VerifyTools;
  /** Present when the client runs this call as an MCP task (`upstream_tasks.ts`). */
  readonly task?: TaskCall;
  /**
   * The MCP session of PML's client the call is for: the server's requests are never relayed to
   * another session's client (`server_requests.ts`).
   */
  readonly clientSession?: object;
}

/**
 * The options of a call on a session from the target's {@link CallContext}: its bound, signal and
 * progress, and the server's sampling requests answered under `sampling:<server>` with the MCP's
 * `allowedToolPatterns` as the model's tools.
 */
export function upstreamCallOptions(
  server: string,
  ctx: Pick<
    CallContext,
    "signal" | "progress" | "sample" | "serverElicit" | "log" | "task" | "clientSession"
  >,
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
    elicit: ctx.serverElicit,
    log: ctx.log,
    verify: opts.verify,
    task: ctx.task,
    clientSession: ctx.clientSession,
  };
}
