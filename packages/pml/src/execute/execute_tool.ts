import type { AuditLog } from "../audit/audit.ts";
import type { CallChannel, MetaTool } from "../gateway/gateway.ts";
import { type ApprovalRequest, type Approvals, refusedBy } from "../permission/approvals.ts";
import type { CallToolResult } from "../sdk/types.ts";
import { Journal } from "./journal.ts";
import { executeInputSchema, parseExecuteArgs } from "./args.ts";
import { type PlanDeps, planExecution, type RemoteExecutor } from "./plan.ts";
import { failureResult, successResult } from "./result.ts";
import { aheadChannel, readsAhead, startReads } from "./read_ahead.ts";
import { type Attempt, runAttempt, type RunDeps } from "./run_execution.ts";

/** Default whole-execution timeout (DESIGN §9); `timeout_ms` can only lower it. */
export const DEFAULT_EXECUTION_TIMEOUT_MS = 30_000;
/** Default per-call timeout of `mcp.*` calls. */
export const DEFAULT_RPC_TIMEOUT_MS = 20_000;

/** Tunables of `pml:execute`. */
export interface ExecuteOptions {
  /** Whole execution; `timeout_ms` lowers it (default 30 s). */
  readonly timeoutMs?: number;
  /** Per `mcp.*` call (default 20 s). */
  readonly rpcTimeoutMs?: number;
}

/**
 * What `pml:execute` needs: the gateway pipeline (bound late), routing, permissions, approvals, a
 * sandbox, and the cloud when one is configured.
 */
export interface ExecuteToolDeps extends Omit<RunDeps, "rpcTimeoutMs"> {
  readonly approvals: Approvals;
  readonly permissionOf: PlanDeps["permissionOf"];
  readonly isClientTool?: PlanDeps["isClientTool"];
  readonly cloud?: RemoteExecutor;
  /**
   * True for a tool that only reads (a std tool with read access): the calls of code that uses
   * nothing else are started ahead of it (`read_ahead.ts`). Default: none.
   */
  readonly readsOnly?: (toolId: string) => boolean;
  /** Wakes the sandbox the run will take, while the code is being planned. */
  readonly wakeSandbox?: () => void;
  readonly audit?: AuditLog;
  readonly options?: ExecuteOptions;
}

const DESCRIPTION =
  "Run TypeScript code that calls tools as `await mcp.namespace.action(args)` and `return`s a " +
  "result. The code runs in a sandbox with no file, network, env or subprocess access of its own; " +
  "each mcp.* call passes the same permissions and routing as a direct tool call. Returns " +
  '{"status":"success","result","calls"} or {"status":"error","code","message"}.';

/**
 * The `pml:execute` meta tool (DESIGN §9): analyse the code ({@link planExecution}), then run it in
 * a fresh permission-less sandbox whose `mcp.*` calls re-enter the gateway pipeline. An approval
 * that cannot be asked in-line pauses the execution: the result is `approval_required`, and
 * `pml:continue` re-runs the code with the journal of the calls already done (not repeated).
 *
 * @example
 * ```ts
 * const execute = createExecuteTool({ runTool: (id, a, ch) => gateway.runTool(id, a, ch), ... });
 * new Gateway({ ...deps, metaTools: [execute] });
 * ```
 */
export function createExecuteTool(deps: ExecuteToolDeps): MetaTool {
  const maxTimeoutMs = deps.options?.timeoutMs ?? DEFAULT_EXECUTION_TIMEOUT_MS;
  const runDeps: RunDeps = {
    ...deps,
    rpcTimeoutMs: deps.options?.rpcTimeoutMs ?? DEFAULT_RPC_TIMEOUT_MS,
  };
  const planDeps: PlanDeps = {
    routeOf: deps.routeOf,
    permissionOf: deps.permissionOf,
    isClientTool: deps.isClientTool,
    cloud: deps.cloud,
  };

  const execute = async (attempt: Attempt, channel: CallChannel): Promise<CallToolResult> => {
    const outcome = await runAttempt(runDeps, attempt, channel);
    if (outcome.kind === "success") return successResult(outcome.result, outcome.calls);
    if (outcome.kind === "error") return failureResult(outcome.code, outcome.message);
    const { index, request } = outcome;
    const paused: ApprovalRequest = {
      type: request.type,
      description: `pml:execute paused at mcp call #${index + 1}: ${request.description}`,
      context: {
        ...request.context,
        execution: {
          call_index: index,
          completed_calls: attempt.journal.entries.length,
          note: "on yes/always the code runs again from the start; completed calls are replayed",
        },
      },
    };
    return await deps.approvals.ask(paused, async (decision, by, detail) => {
      if (decision === "no") {
        const tool = request.context.tool ?? request.type;
        await deps.audit?.write("permission_denied", { tool, by, via: "pml:execute" });
        const who = refusedBy(by, detail);
        return failureResult(
          "PERMISSION_DENIED",
          `pml:execute stopped: ${who} ${request.description.replace(/\?$/, "")}`,
        );
      }
      return await execute(
        {
          ...attempt,
          journal: new Journal(attempt.journal.entries),
          approved: { index, request, decision },
          // Reads ahead are for code that needs no approval; a re-run makes its calls itself.
          readAhead: undefined,
        },
        {},
      );
    });
  };

  return {
    id: "pml:execute",
    description: DESCRIPTION,
    inputSchema: executeInputSchema(maxTimeoutMs),
    run: async (args, channel) => {
      const parsed = parseExecuteArgs(args, maxTimeoutMs);
      if (!parsed.ok) return parsed.result;
      const { code, timeoutMs } = parsed.value;
      deps.wakeSandbox?.(); // its wake-up overlaps the planning
      const plan = await planExecution(parsed.value, planDeps, channel);
      if (plan.mode === "remote") return plan.result;
      if (plan.mode === "error") {
        const { code: errCode, message, line, column } = plan.error;
        return failureResult(errCode, message, line ? { line, column } : {});
      }
      // The reads the code will make, started now (`read_ahead.ts`); none unless it only reads.
      const reads = deps.readsOnly
        ? readsAhead(plan.analysis, { readsOnly: deps.readsOnly, permissionOf: deps.permissionOf })
        : [];
      const ahead = aheadChannel(channel);
      const readAhead = startReads(reads, (tool, args) => deps.runTool(tool, args, ahead));
      return await execute({ code, timeoutMs, journal: new Journal(), readAhead }, channel);
    },
  };
}
