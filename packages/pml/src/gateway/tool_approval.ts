/**
 * The approval half of the gateway's pipeline: the one question an `ask`ed tool asks (naming what
 * its target would set up first), what its answer does (`no` refused and audited, `always`
 * remembered, `yes` runs the call on the channel of whoever answered), `pml:continue`, and a stored
 * approval revived after a restart, run only when the question it would ask now is the one
 * answered.
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { CallToolResult } from "../sdk/types.ts";
import type { AuditLog } from "../audit/audit.ts";
import { errorMessage, type PmlError } from "../errors.ts";
import {
  type ApprovalDecision,
  type ApprovalRequest,
  type Approvals,
  type DecidedBy,
  type DecisionDetail,
  refusedBy,
  type Resume,
} from "../permission/approvals.ts";
import type { PermissionStore } from "../permission/permission_store.ts";
import type { RoutingResolver } from "../routing/routing.ts";
import { errorResult, type Target, type ToolCall } from "../targets/target.ts";
import { asksToOpenUrl } from "../targets/call_errors.ts";
import type { CallChannel, Covered, MetaTool, StoredCall } from "./call_relay.ts";
import type { ServerToolOf } from "./server_tool.ts";

/** What the approval half needs of the gateway's dependencies (`GatewayDeps`). */
export interface ApprovalDeps {
  readonly permissions: PermissionStore;
  readonly approvals: Approvals;
  readonly routing: RoutingResolver;
  readonly audit: AuditLog;
  /** The MCP server an asked tool belongs to, said in its question (`context.mcp_server`). */
  readonly serverTool?: ServerToolOf;
  /** Calls that wait for their user to sign in to a remote server (`oauth/remote_sign_in.ts`). */
  readonly signIns?: {
    owns(workflowId: string): boolean;
    continue(workflowId: string, decision: string): Promise<CallToolResult>;
  };
}

/**
 * Runs a call on its target (`Gateway`'s dispatch; `covered` and `firstUse` as
 * `CallRelay.context` takes them).
 */
export type Dispatch = (
  target: Target,
  toolId: string,
  args: Record<string, unknown>,
  channel: CallChannel,
  covered?: Covered,
  firstUse?: StoredCall,
) => Promise<CallToolResult>;

/** The target that runs a tool id now (`Gateway`'s resolution). */
export type TargetFor = (
  toolId: string,
) => Promise<{ target: Target } | { unavailable: PmlError } | undefined>;

/** See the module documentation. */
export class ToolApproval {
  readonly #deps: ApprovalDeps;
  readonly #dispatch: Dispatch;
  /**
   * The channel of the `pml:continue` request that resumes an approved call: the resumed work
   * (its sampling relays, elicitations, progress, cancellation) runs on it, since the request that
   * was asked has been answered already (over `pml serve`, a request related to it fails with "No
   * connection established").
   */
  readonly #resuming = new AsyncLocalStorage<CallChannel>();
  /** `pml:continue`: answers a pending approval (or a sign-in) and returns the call's result. */
  readonly continueTool: MetaTool = {
    id: "pml:continue",
    description:
      "Answer a pending approval: pass the workflow_id of an approval_required result and the " +
      'decision. For "approval_mode":"human" the user decides in a terminal (`pml approve ' +
      "<workflow_id>` or `pml approvals --open`) and this returns the result once they have; " +
      "until then it says it waits.",
    inputSchema: {
      type: "object",
      properties: {
        workflow_id: { type: "string" },
        decision: { type: "string", enum: ["yes", "always", "no"] },
      },
      required: ["workflow_id", "decision"],
    },
    run: (args, channel) => this.#continue(args, channel),
  };

  constructor(deps: ApprovalDeps, dispatch: Dispatch, targetFor: TargetFor) {
    this.#deps = deps;
    this.#dispatch = dispatch;
    // After a restart, a stored tool approval runs its call again once decided: the question
    // that call would ask now must be the one stored (the same tool, arguments and what the
    // target sets up first), and what the target sets up is covered once, as in the first call.
    deps.approvals.revive = async (stored) => {
      const replay = stored.replay;
      const found = replay && await targetFor(replay.tool);
      if (!replay || !found || !("target" in found)) return undefined;
      const { tool, arguments: args } = replay;
      const target = found.target;
      if (stored.type === "dependency") return this.#revivedFirstUse(stored, target, replay);
      return async (d, by, detail) => {
        const now = await this.#question(target, tool, args);
        if ("refusal" in now) return now.refusal;
        if (!sameRequest(now.request, stored) || !sameHuman(now.request, stored)) {
          return errorResult(
            `Not run: "${tool}" would now ask another question than the one answered ` +
              `(what it sets up or touches changed since); call the tool again`,
          );
        }
        const covers = now.covers;
        return await this.#after(
          d,
          by,
          detail,
          tool,
          () =>
            this.#dispatch(
              target,
              tool,
              args,
              this.#resuming.getStore() ?? {},
              covers && { request: covers, by },
            ),
        );
      };
    };
  }

  /**
   * A stored first install or run of an allowed call (`CallRelay.context`'s `firstUse`), after a
   * restart: a "no" runs nothing; a "yes" runs the call again while its tool is still allowed,
   * covering that question once, so that it runs only when its target asks exactly the question
   * answered (a changed command or grant is asked anew, stored again).
   */
  #revivedFirstUse(stored: ApprovalRequest, target: Target, call: StoredCall): Resume {
    const tool = call.tool;
    return async (d, by) => {
      const server = String(stored.context.server ?? tool.slice(0, tool.indexOf(":")));
      if (d === "no") return errorResult(`Running ${server} refused: "${tool}" did not run`);
      if (this.#deps.permissions.check(tool) !== "allow") {
        return errorResult(
          `Not run: "${tool}" is no longer allowed by .pml.json permissions; call the tool again`,
        );
      }
      const channel = this.#resuming.getStore() ?? {};
      const covered = { request: stored, by };
      return await this.#dispatch(target, tool, call.arguments, channel, covered, call);
    };
  }

  /**
   * An `ask`ed tool's call: its question (or its target's refusal), then, once answered, the call
   * on the channel of the request that answered it.
   */
  async ask(
    target: Target,
    toolId: string,
    args: Record<string, unknown>,
    channel: CallChannel,
  ): Promise<CallToolResult> {
    const question = await this.#question(target, toolId, args);
    if ("refusal" in question) return question.refusal;
    const { request, covers } = question;
    return await this.#deps.approvals.ask(
      request,
      (d, by, detail) =>
        this.#after(
          d,
          by,
          detail,
          toolId,
          () =>
            this.#dispatch(
              target,
              toolId,
              args,
              this.#resuming.getStore() ?? channel,
              covers && { request: covers, by },
            ),
        ),
      // Stored with the call, so that any later pml of the workspace can run it once decided
      // (after asking the same question again: see `revive`).
      { elicit: channel.elicit, replay: { tool: toolId, arguments: args } },
    );
  }

  /**
   * The question about an `ask` tool: one, naming what the target would set up first (an
   * install, its grants); the target approval it covers is not asked again in the call. A
   * target's refusal (the call cannot run whatever the answer) instead.
   */
  async #question(
    target: Target,
    toolId: string,
    args: Record<string, unknown>,
  ): Promise<
    { request: ApprovalRequest; covers?: ApprovalRequest } | { refusal: CallToolResult }
  > {
    const answer = await target.preflight?.(splitCall(toolId, args)).catch(() => undefined);
    if (answer && "refusal" in answer) {
      const { code, message } = answer.refusal;
      return { refusal: errorResult(message, { status: "error", code, message }) };
    }
    const pre = answer;
    const server = await this.#deps.serverTool?.(toolId, target);
    const request: ApprovalRequest = {
      type: "tool_permission",
      description: `Allow "${toolId}" to run?${pre ? ` ${pre.description}` : ""}`,
      context: {
        tool: toolId,
        arguments: args,
        routing: this.#deps.routing.routeOf(toolId),
        ...(server ? { mcp_server: server } : {}),
        ...pre?.context,
      },
      allows: toolId,
      ...(pre?.forHuman ? { forHuman: pre.forHuman } : {}),
    };
    return { request, covers: pre?.covers };
  }

  async #after(
    decision: ApprovalDecision,
    by: DecidedBy,
    detail: DecisionDetail | undefined,
    toolId: string,
    run: () => Promise<CallToolResult>,
  ): Promise<CallToolResult> {
    if (decision === "no") {
      await this.#deps.audit.write("permission_denied", {
        tool: toolId,
        by,
        ...(detail?.ms !== undefined ? { declined_in_ms: detail.ms } : {}),
      });
      return errorResult(
        by === "agent"
          ? `Permission denied: "${toolId}" was refused with pml:continue (decision "no")`
          : by === "user"
          ? `Permission denied: the user refused "${toolId}"`
          : `Permission denied: "${toolId}" was not run: ${refusedBy(by, detail)}`,
      );
    }
    if (decision === "always") await this.#deps.permissions.allowAlways(toolId);
    return await run();
  }

  async #continue(args: Record<string, unknown>, channel: CallChannel): Promise<CallToolResult> {
    const id = args.workflow_id;
    const decision = args.decision;
    if (typeof id !== "string" || !["yes", "always", "no"].includes(decision as string)) {
      return errorResult(
        `pml:continue needs {"workflow_id": string, "decision": "yes"|"always"|"no"}`,
      );
    }
    const signIns = this.#deps.signIns;
    if (signIns?.owns(id)) {
      return await this.#resuming.run(channel, () => signIns.continue(id, decision as string));
    }
    try {
      return await this.#resuming.run(
        channel,
        () => this.#deps.approvals.continue(id, decision as ApprovalDecision),
      );
    } catch (err) {
      if (asksToOpenUrl(err)) throw err; // as in the gateway's dispatch
      return errorResult(errorMessage(err));
    }
  }
}

/** A tool id and its arguments as a target takes them. */
export function splitCall(toolId: string, args: Record<string, unknown>): ToolCall {
  const colon = toolId.indexOf(":");
  return { toolId, ns: toolId.slice(0, colon), action: toolId.slice(colon + 1), args };
}

/** The same question: type, words and context (what was shown is what is covered). */
export function sameRequest(a: ApprovalRequest, b: ApprovalRequest): boolean {
  return a.type === b.type && a.description === b.description &&
    JSON.stringify(a.context) === JSON.stringify(b.context);
}

/** The same part only a human sees, and the same id "always" allows. */
function sameHuman(a: ApprovalRequest, b: ApprovalRequest): boolean {
  return a.allows === b.allows && JSON.stringify(a.forHuman) === JSON.stringify(b.forHuman);
}
