/**
 * The relay half of the gateway's pipeline: what a call made on a client's request can reach (its
 * {@link CallChannel}), turned into the {@link CallContext} its target runs with: nested `mcp.*`
 * calls back through the whole pipeline, the MCP's sampling requests (decided by
 * `sampling:<mcp>`, asked through the channel's elicitation, bounded per tool call), a fronted
 * server's questions and log lines, progress, the sign-in URL, the task, the MCP session the call
 * came from, and the target's own approvals.
 *
 * @module
 */
import type {
  CallToolResult,
  CreateMessageRequestParams,
  CreateMessageResult,
  Tool,
} from "../sdk/types.ts";
import type { ClientSample, Sampling, SamplingBudget } from "../sampling/sampling.ts";
import { PmlError } from "../errors.ts";
import type {
  ApprovalDecision,
  ApprovalRequest,
  Approvals,
  AskVia,
  DecidedBy,
} from "../permission/approvals.ts";
import type { Elicit } from "../permission/elicitation.ts";
import {
  type CallContext,
  errorResult,
  fromCallToolResult,
  type OpenUrl,
  resultText,
  type SampleOptions,
} from "../targets/target.ts";
import type { ServerElicit, ServerLog } from "../targets/upstream/server_requests.ts";
import type { TaskCall } from "../targets/upstream/upstream_tasks.ts";
import { isToolId } from "./names.ts";
import { sameRequest } from "./tool_approval.ts";

/** How the current request can reach the human and the client. */
export interface CallChannel {
  /** Present when the client declared the `elicitation` capability. */
  readonly elicit?: Elicit;
  readonly progress?: (progress: number, total?: number, message?: string) => Promise<void>;
  readonly signal?: AbortSignal;
  /** Present when the client declared the `sampling` capability: relays a request to it. */
  readonly sample?: ClientSample;
  /** The client's sampling also takes tools (`sampling.tools`). */
  readonly sampleTools?: boolean;
  /** Present when the client elicits: relays a fronted server's own question (`CallContext`). */
  readonly serverElicit?: ServerElicit;
  /** Sends a fronted server's log line on this request's stream. */
  readonly log?: ServerLog;
  /**
   * Present when the client declared URL-mode elicitation: asks it to show the user a URL (a
   * sign-in), never the model; resolves to the user's answer (`accept`: they went to open it).
   */
  readonly openUrl?: OpenUrl;
  /** Present when the client runs this call as an MCP task (`task_calls.ts`). */
  readonly task?: TaskCall;
  /** The MCP session the request came from (one per connection, `CallContext.clientSession`). */
  readonly clientSession?: object;
  /**
   * A call nobody has made yet (a read `pml:execute` starts ahead of its code, `read_ahead.ts`):
   * a question its target would ask is neither asked nor stored, and the call ends with
   * `NOT_ASKED` at once; the code's own call, if it makes it, is then made as any other.
   */
  readonly noQuestions?: boolean;
}

/** A tool of PML itself (`pml:continue`, `pml:execute`, `pml:search`): not subject to permissions. */
export interface MetaTool {
  readonly id: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  /** As `ToolInfo.annotations`: set for a meta tool that only reads (`pml:search`). */
  readonly annotations?: Tool["annotations"];
  run(args: Record<string, unknown>, channel: CallChannel): Promise<CallToolResult>;
}

/** A target approval already answered in the tool's own question, and who answered it. */
export interface Covered {
  readonly request: ApprovalRequest;
  readonly by: DecidedBy;
}

/** A tool call as an approval stores it, to run it again after a restart. */
export type StoredCall = NonNullable<AskVia["replay"]>;

/**
 * The first install or run a target asks during an allowed call, naming that call (its tool and
 * arguments, shown to the human and written in the audit line of the decision).
 */
export function firstUseQuestion(asked: ApprovalRequest, call: StoredCall): ApprovalRequest {
  return { ...asked, context: { tool: call.tool, arguments: call.arguments, ...asked.context } };
}

/** Tool call failed in a way the caller of a nested `mcp.*` call sees as an exception. */
export class ToolCallError extends PmlError {}

/** What the relay needs of the pipeline it belongs to. */
export interface Pipeline {
  /** Runs a tool id through the whole pipeline (`Gateway.runTool`). */
  runTool(toolId: string, args: unknown, channel: CallChannel): Promise<CallToolResult>;
  /** The tools a `tools/list` shows, by tool id: the tools a sampling model may use. */
  listTools(): Promise<{ id: string; description: string; inputSchema: Tool["inputSchema"] }[]>;
}

/** See the module documentation. */
export class CallRelay {
  readonly #approvals: Approvals;
  readonly #sampling?: Sampling;
  readonly #pipeline: Pipeline;
  /** Per tool call (its channel): what its sampling requests have used, nested calls included. */
  readonly #samplingBudgets = new WeakMap<CallChannel, SamplingBudget>();

  constructor(deps: { approvals: Approvals; sampling?: Sampling; pipeline: Pipeline }) {
    this.#approvals = deps.approvals;
    this.#sampling = deps.sampling;
    this.#pipeline = deps.pipeline;
  }

  /**
   * The context of a call on `channel`. `covered` is a target approval the human has already
   * answered inside the tool's own question: when the target asks exactly it, once, it is not
   * asked again. `firstUse` is the call itself when it needs no approval of its own (an allowed
   * tool): a first install or run its target asks (`dependency`) then names it and is stored with
   * it, so that a later `pml` continues it (`ToolApproval`'s revive); see {@link firstUseQuestion}.
   */
  context(
    channel: CallChannel,
    covered?: Covered,
    firstUse?: StoredCall,
  ): CallContext {
    return {
      callTool: (id, a) => this.#nested(id, a, channel),
      progress: channel.progress,
      signal: channel.signal,
      sample: (server, params, opts) => this.#sample(server, params, opts, channel),
      openUrl: channel.openUrl,
      serverElicit: channel.serverElicit,
      log: channel.log,
      task: channel.task,
      clientSession: channel.clientSession,
      ask: (asked, resume) => {
        if (channel.noQuestions) return Promise.resolve(notAsked(asked));
        const stored = firstUse && asked.type === "dependency";
        const request = stored ? firstUseQuestion(asked, firstUse) : asked;
        if (covered && sameRequest(covered.request, request)) {
          const by = covered.by;
          covered = undefined;
          return resume("yes", by);
        }
        return this.#approvals.ask(request, resume, {
          elicit: channel.elicit,
          ...(stored ? { replay: firstUse } : {}),
        });
      },
    };
  }

  /**
   * A sampling request of the MCP `server`, made during a call on `channel`: the human is asked
   * through that channel's elicitation, tools the model uses run through the pipeline on it.
   */
  async #sample(
    server: string,
    params: CreateMessageRequestParams,
    opts: SampleOptions,
    channel: CallChannel,
  ): Promise<CreateMessageResult> {
    const sampling = this.#sampling;
    if (!sampling) {
      throw new PmlError("SAMPLING_UNAVAILABLE", `Sampling is not available to "${server}" here`);
    }
    const elicit = channel.elicit;
    let budget = this.#samplingBudgets.get(channel);
    if (!budget) this.#samplingBudgets.set(channel, budget = { requests: 0 });
    return await sampling.sample({
      server,
      params,
      budget,
      allowedToolPatterns: opts.allowedToolPatterns,
      signal: opts.signal ?? channel.signal,
      onprogress: opts.onprogress,
      clientSample: channel.sample,
      clientTools: channel.sampleTools,
      ask: elicit
        ? async (request) => {
          let decided: ApprovalDecision | undefined;
          await this.#approvals.ask(request, (d) => {
            decided = d;
            return Promise.resolve({ content: [] });
          }, { elicit });
          return decided;
        }
        : undefined,
      tools: {
        list: () => this.#pipeline.listTools(),
        run: (toolId, args) => this.#pipeline.runTool(toolId, args, channel),
      },
    });
  }

  /** A nested `mcp.ns.action()` call from sandboxed code: same pipeline, result unwrapped. */
  async #nested(toolId: string, args: unknown, channel: CallChannel): Promise<unknown> {
    if (!isToolId(toolId)) throw new ToolCallError("UNKNOWN_TOOL", `Unknown tool "${toolId}"`);
    const result = await this.#pipeline.runTool(toolId, args, channel);
    if (result.isError) {
      throw new ToolCallError("TOOL_ERROR", resultText(result) || `"${toolId}" failed`);
    }
    if (result.structuredContent?.status === "approval_required") {
      throw new ToolCallError(
        "APPROVAL_REQUIRED",
        `"${toolId}" needs approval, which cannot be asked from inside this call; allow it in .pml.json`,
      );
    }
    return fromCallToolResult(result);
  }
}

/** The error code of a call that needed a question on a `noQuestions` channel. */
export const NOT_ASKED = "NOT_ASKED";

/** The answer of a call that would ask `request` on a channel that asks nothing. */
function notAsked(request: ApprovalRequest): CallToolResult {
  const message = `Not asked: ${request.description}`;
  return errorResult(message, { status: "error", code: NOT_ASKED, message });
}
