/**
 * `pml:execute` (DESIGN §9): code that calls `mcp.ns.action()` runs in a permission-less sandbox,
 * each call re-entering the gateway pipeline.
 *
 * @module
 */
import type { AuditLog } from "../audit/audit.ts";
import type { Gateway, MetaTool } from "../gateway/gateway.ts";
import type { Approvals } from "../permission/approvals.ts";
import type { RoutingResolver } from "../routing/routing.ts";
import { isStdReadTool } from "../targets/std/std_target.ts";
import { createExecuteTool, type ExecuteOptions } from "./execute_tool.ts";
import type { RemoteExecutor } from "./plan.ts";
import { ExecSandboxPool, execSandboxSpec } from "./warm_pool.ts";

export {
  createExecuteTool,
  DEFAULT_EXECUTION_TIMEOUT_MS,
  DEFAULT_RPC_TIMEOUT_MS,
  type ExecuteOptions,
} from "./execute_tool.ts";
export {
  type ExecutionPlan,
  type LocalReason,
  type PlanDeps,
  planExecution,
  type RemoteExecutor,
} from "./plan.ts";
export { type ExecuteArgs, executeInputSchema, parseExecuteArgs } from "./args.ts";
export { ExecSandboxPool, execSandboxSpec } from "./warm_pool.ts";
export { Journal, type JournalEntry } from "./journal.ts";
export { canonicalJson } from "../canonical_json.ts";
export type { CallReport, ExecuteErrorCode } from "./result.ts";

/**
 * Wires `pml:execute` for a gateway that does not exist yet (the meta tool is a constructor
 * argument of the gateway; its calls go back through `gateway().runTool`). The pool is a resource
 * for the gateway to close.
 */
export function createExecute(deps: {
  readonly gateway: () => Gateway;
  readonly routing: RoutingResolver;
  readonly approvals: Approvals;
  readonly audit: AuditLog;
  readonly workspace: string;
  /** The cloud target, when an API key is set (code is planned by the server first). */
  readonly cloud?: RemoteExecutor;
  readonly options?: ExecuteOptions & { readonly keepWarm?: boolean };
}): { tool: MetaTool; pool: ExecSandboxPool } {
  const pool = new ExecSandboxPool(execSandboxSpec, { keepWarm: deps.options?.keepWarm });
  const tool = createExecuteTool({
    takeSandbox: () => pool.take(),
    wakeSandbox: () => pool.wake(),
    runTool: (id, args, channel) => deps.gateway().runTool(id, args, channel),
    routeOf: (id) => deps.routing.routeOf(id),
    isClientTool: (id) => deps.routing.table.client.includes(id.slice(0, id.indexOf(":"))),
    permissionOf: (id) => deps.gateway().permissions.check(id),
    readsOnly: isStdReadTool,
    cloud: deps.cloud,
    approvals: deps.approvals,
    audit: deps.audit,
    workspace: deps.workspace,
    options: deps.options,
  });
  return { tool, pool };
}
