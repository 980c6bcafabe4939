import { errorMessage, isPmlError, PmlError } from "../errors.ts";
import type { CallChannel } from "../gateway/gateway.ts";
import { isToolId } from "../gateway/names.ts";
import type { ApprovalDecision, ApprovalRequest } from "../permission/approvals.ts";
import { type Elicit, ElicitationUnanswered } from "../permission/elicitation.ts";
import type { Routing } from "../routing/routing.ts";
import { SandboxError, type SandboxProcess } from "../sandbox/sandbox_process.ts";
import type { CallToolResult } from "../sdk/types.ts";
import { fromCallToolResult, resultText } from "../targets/target.ts";
import { Deadline } from "./deadline.ts";
import { canonicalJson } from "../canonical_json.ts";
import type { Journal } from "./journal.ts";
import { type AheadRead, notAsked } from "./read_ahead.ts";
import { CALL_ERROR_CODES, type CallReport, type ExecuteErrorCode } from "./result.ts";

/** What one run of the code needs from the gateway. */
export interface RunDeps {
  /** A fresh sandbox (killed by the run when it ends). */
  readonly takeSandbox: () => SandboxProcess;
  /** The gateway pipeline for one tool: permission → routing → target. */
  readonly runTool: (
    toolId: string,
    args: unknown,
    channel: CallChannel,
  ) => Promise<CallToolResult>;
  readonly routeOf: (toolId: string) => Routing;
  /** Per `mcp.*` call. */
  readonly rpcTimeoutMs: number;
  /** Workspace path passed to the runner (the sandbox cannot read it). */
  readonly workspace: string;
}

/** A decision already given for the call at `index` (the one the previous run paused on). */
export interface PreApproval {
  readonly index: number;
  readonly request: ApprovalRequest;
  readonly decision: ApprovalDecision;
}

/** One run of the code from the start. */
export interface Attempt {
  readonly code: string;
  readonly timeoutMs: number;
  readonly journal: Journal;
  readonly approved?: PreApproval;
  /** Reads started before the code asked for them (`read_ahead.ts`): taken by matching calls. */
  readonly readAhead?: readonly AheadRead[];
}

/** How a run ended. */
export type Outcome =
  | { readonly kind: "success"; readonly result: unknown; readonly calls: CallReport[] }
  | { readonly kind: "error"; readonly code: ExecuteErrorCode; readonly message: string }
  | { readonly kind: "paused"; readonly index: number; readonly request: ApprovalRequest };

/** Meta tools that code must not reach: answering approvals, nesting executions. */
const FORBIDDEN_FROM_CODE = new Set(["pml:continue", "pml:execute"]);
/** Deno's refusals of an operation the sandbox has no permission for. */
const REFUSED = /^(NotCapable|PermissionDenied)$|Requires \w+ access to/;

/** Thrown by the elicitation stand-in when an approval must pause the run. */
class ApprovalPause extends Error {
  constructor(readonly request: ApprovalRequest) {
    super("pml:execute paused for an approval");
  }
}

function callError(code: string, message: string): PmlError {
  return new PmlError(code, message);
}

function failureOf(toolId: string, result: CallToolResult): PmlError {
  const sc = result.structuredContent as { code?: unknown; message?: unknown } | undefined;
  const text = (typeof sc?.message === "string" ? sc.message : resultText(result)) ||
    `"${toolId}" failed`;
  if (typeof sc?.code === "string" && CALL_ERROR_CODES.has(sc.code)) {
    return callError(sc.code, text);
  }
  if (/PML cloud .*(is unreachable|did not answer)/.test(text)) {
    return callError("CLOUD_UNREACHABLE", text);
  }
  if (text.startsWith("Permission denied")) return callError("PERMISSION_DENIED", text);
  return callError("TOOL_ERROR", text);
}

/**
 * Runs `attempt.code` once in a fresh sandbox. Each `mcp.*` call is replayed from the journal or
 * sent through `deps.runTool`; an approval that cannot be asked in-line (no elicitation) stops the
 * run with `paused` once the calls in flight have settled (so their outcomes are journaled).
 */
export async function runAttempt(
  deps: RunDeps,
  attempt: Attempt,
  channel: CallChannel,
): Promise<Outcome> {
  const { journal } = attempt;
  const calls: CallReport[] = [];
  const inFlight = new Set<Promise<unknown>>();
  let approved = attempt.approved;
  let nextIndex = 0;
  let stop: Outcome | undefined;
  let finished = false;
  const proc = deps.takeSandbox();
  const end = (outcome: Outcome) => {
    stop ??= outcome;
    proc.kill();
  };
  const deadline = new Deadline(attempt.timeoutMs, () =>
    end({
      kind: "error",
      code: "EXECUTION_TIMEOUT",
      message:
        `pml:execute code did not finish within ${attempt.timeoutMs} ms; its sandbox was killed`,
    }));
  const onAbort = () =>
    end({ kind: "error", code: "CODE_ERROR", message: "pml:execute was cancelled by the client" });
  channel.signal?.addEventListener("abort", onAbort);
  // The calls the code makes end with the run: when it ends (the code returned or failed, a
  // timeout, a pause, the client's cancellation), those still running are cancelled (a
  // `shell:exec` command is killed), as the client's own cancellation cancels them.
  const ended = new AbortController();
  const callSignal = channel.signal
    ? AbortSignal.any([channel.signal, ended.signal])
    : ended.signal;

  const live = async (index: number, tool: string, args: unknown): Promise<unknown> => {
    if (!isToolId(tool)) throw callError("UNKNOWN_TOOL", `Unknown tool "${tool}"`);
    if (FORBIDDEN_FROM_CODE.has(tool)) {
      throw callError("PERMISSION_DENIED", `"${tool}" cannot be called from pml:execute code`);
    }
    let paused: ApprovalPause | undefined;
    let rpcTimer: Deadline | undefined;
    const elicit: Elicit = async (request) => {
      if (
        approved?.index === index && approved.request.type === request.type &&
        canonicalJson(approved.request) === canonicalJson(request)
      ) {
        const decision = approved.decision;
        approved = undefined;
        return decision;
      }
      if (!channel.elicit) throw (paused = new ApprovalPause(request));
      deadline.pause();
      rpcTimer?.pause();
      try {
        return await channel.elicit(request);
      } catch (err) {
        // Nobody decided (cancel, error, no answer): pause as if the client could not elicit.
        if (err instanceof ElicitationUnanswered) throw (paused = new ApprovalPause(request));
        throw err;
      } finally {
        deadline.resume();
        rpcTimer?.resume();
      }
    };
    const run = deps.runTool(tool, args, { ...channel, elicit, signal: callSignal });
    run.catch(() => {}); // may settle after the race was lost to the timer
    const timeout = new Promise<never>((_, reject) => {
      rpcTimer = new Deadline(deps.rpcTimeoutMs, () => reject(rpcTimeout(deps, tool)));
    });
    try {
      const result = await Promise.race([run, timeout]);
      if (paused) throw paused;
      return valueOf(tool, result);
    } catch (err) {
      if (paused || err instanceof ApprovalPause) throw paused ?? err;
      throw asCallError(tool, err);
    } finally {
      rpcTimer?.clear();
    }
  };

  /** Journals call `index` and adds it to the report. */
  const record = (
    index: number,
    tool: string,
    args: unknown,
    routing: Routing,
    started: number,
    outcome: { ok: true; value: unknown } | { ok: false; err: unknown },
  ) => {
    const ms = Math.round(performance.now() - started);
    journal.record({
      index,
      tool,
      args: canonicalJson(args),
      outcome: outcome.ok ? outcome : {
        ok: false,
        error: {
          name: "Error",
          message: errorMessage(outcome.err),
          code: isPmlError(outcome.err) ? outcome.err.code : "TOOL_ERROR",
        },
      },
      routing,
      ms,
    });
    calls.push({ tool, routing, ms });
  };

  // Reads started ahead: the sandbox gets each outcome as it comes, and the code takes it when it
  // makes that call (the sandbox process hands each index over once); then it counts as the code's
  // call, in the order the code made it, and the per-call timeout runs from there, as for a call
  // made live. A read that would have asked a question asked none (`aheadChannel`): the code's
  // call is made live when it takes it, so that it is asked, or pauses the run, as without it.
  const aheads = (attempt.readAhead ?? []).map((read) => {
    let startClock!: () => void;
    const timedOut = new Promise<never>((_, reject) => {
      startClock = () => {
        const timer = new Deadline(deps.rpcTimeoutMs, () => reject(rpcTimeout(deps, read.tool)));
        read.result.finally(() => timer.clear()).catch(() => {});
      };
    });
    let takenAs!: (index: number) => void;
    const taken = new Promise<number>((resolve) => (takenAs = resolve));
    const answered = Promise.race([
      read.result.catch((err) => Promise.reject(asCallError(read.tool, err))),
      timedOut,
    ]);
    const outcome = answered.then((result) =>
      notAsked(result)
        ? taken.then((index) => callLive(index, read.tool, read.args))
        : valueOf(read.tool, result)
    );
    outcome.catch(() => {}); // a read the code never takes
    return { read, answered, outcome, startClock, takenAs };
  });
  const onTaken = (i: number) => {
    const ahead = aheads[i];
    if (!ahead || stop || finished) return;
    ahead.startClock();
    const { tool, args } = ahead.read;
    const index = nextIndex++;
    ahead.takenAs(index);
    const routing = deps.routeOf(tool);
    const started = performance.now();
    const recordIt = () =>
      ahead.outcome.then(
        (value) => record(index, tool, args, routing, started, { ok: true, value }),
        (err) => record(index, tool, args, routing, started, { ok: false, err }),
      );
    // A call made live records itself.
    ahead.answered.then((result) => notAsked(result) ? undefined : recordIt(), recordIt);
  };

  const onMcp = async (tool: string, args: unknown): Promise<unknown> => {
    const index = nextIndex++;
    if (stop || finished) return await new Promise(() => {}); // the run is ending: never answered
    const replayed = journal.replay(index, tool, args);
    if (replayed) {
      calls.push({ tool, routing: deps.routeOf(tool), ms: replayed.ms, replayed: true });
      if (replayed.outcome.ok) return replayed.outcome.value;
      throw callError(replayed.outcome.error.code ?? "TOOL_ERROR", replayed.outcome.error.message);
    }
    return await callLive(index, tool, args);
  };

  /** Call `index` of the code, made now through the pipeline, journaled; a pause stops the run. */
  const callLive = async (index: number, tool: string, args: unknown): Promise<unknown> => {
    const routing = deps.routeOf(tool);
    const started = performance.now();
    const call = live(index, tool, args);
    inFlight.add(call);
    try {
      const value = await call;
      record(index, tool, args, routing, started, { ok: true, value });
      return value;
    } catch (err) {
      if (err instanceof ApprovalPause) {
        inFlight.delete(call);
        // Let the other calls in flight finish (and be journaled) before the sandbox goes.
        const others = Promise.allSettled([...inFlight]);
        stop ??= { kind: "paused", index, request: err.request };
        others.then(() => proc.kill());
        return await new Promise(() => {});
      }
      record(index, tool, args, routing, started, { ok: false, err });
      throw err;
    } finally {
      inFlight.delete(call);
    }
  };

  try {
    const result = await proc.call(
      { ns: "exec", action: "run", args: { code: attempt.code }, workspace: deps.workspace },
      {
        onMcp,
        ahead: aheads.length
          ? {
            keys: aheads.map((a) => a.read.key),
            outcomes: aheads.map((a) => a.outcome),
            onTaken,
          }
          : undefined,
      },
    );
    return stop ?? { kind: "success", result, calls };
  } catch (err) {
    if (stop) return stop;
    return codeFailure(err);
  } finally {
    deadline.clear();
    channel.signal?.removeEventListener("abort", onAbort);
    ended.abort("the pml:execute run ended");
    // Killed in every case; a run that was stopped (timeout, pause) also waits for the reap, so
    // that its result is only returned once the process is gone.
    if (stop) await proc.close();
    else {
      // The code has returned: later calls of anything it left running are never answered, and
      // the kill (a stop, a look at its children, then SIGKILL: ~1 ms of this thread, up to 4 ms
      // on a busy machine) runs after the result has been sent instead of before.
      finished = true;
      setTimeout(() => proc.kill(), 0);
    }
  }
}

/** The failure of a call of `tool` that did not answer within the per-call timeout. */
function rpcTimeout(deps: RunDeps, tool: string): PmlError {
  return callError(
    "RPC_TIMEOUT",
    `mcp.${tool.replace(":", ".")}() did not answer within ${deps.rpcTimeoutMs} ms`,
  );
}

/** What the code gets for a tool's result: its value, or the failure it throws. */
function valueOf(tool: string, result: CallToolResult): unknown {
  if (result.isError) throw failureOf(tool, result);
  return fromCallToolResult(result);
}

/** A failure of the call of `tool` as the code sees it (a `PmlError` with an execute code). */
function asCallError(tool: string, err: unknown): PmlError {
  return isPmlError(err) ? err : callError("TOOL_ERROR", `"${tool}" failed: ${errorMessage(err)}`);
}

/** Maps what the code threw (or how its sandbox died) to an execution failure. */
function codeFailure(err: unknown): Outcome {
  if (err instanceof SandboxError) {
    const code = err.wire.code;
    if (code && CALL_ERROR_CODES.has(code)) {
      return { kind: "error", code: code as ExecuteErrorCode, message: err.message };
    }
    if (REFUSED.test(err.name) || REFUSED.test(err.message)) {
      return {
        kind: "error",
        code: "PERMISSION_DENIED",
        message:
          `The pml:execute sandbox refused an operation (code has no file, network, env or ` +
          `subprocess access of its own; use mcp.* tools): ${err.message}`,
      };
    }
    return { kind: "error", code: "CODE_ERROR", message: `${err.name}: ${err.message}` };
  }
  return { kind: "error", code: "CODE_ERROR", message: `pml:execute failed: ${errorMessage(err)}` };
}
