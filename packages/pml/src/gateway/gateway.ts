import type {
  CallToolResult,
  CreateMessageRequestParams,
  CreateMessageResult,
  Tool,
} from "../sdk/types.ts";
import { AsyncLocalStorage } from "node:async_hooks";
import type { ClientSample, Sampling, SamplingBudget } from "../sampling/sampling.ts";
import type { AuditLog } from "../audit/audit.ts";
import { errorMessage, isPmlError, PmlError } from "../errors.ts";
import {
  type ApprovalDecision,
  type ApprovalRequest,
  type Approvals,
  type DecidedBy,
  type DecisionDetail,
  type Elicit,
  refusedBy,
} from "../permission/approvals.ts";
import { namedNamespaces } from "../permission/patterns.ts";
import type { PermissionStore } from "../permission/permission_store.ts";
import type { RoutingResolver } from "../routing/routing.ts";
import {
  errorResult,
  fromCallToolResult,
  invalidArguments,
  type OpenUrl,
  resultText,
  type SampleOptions,
  type Target,
  type ToolCall,
  type ToolInfo,
} from "../targets/target.ts";
import { asksToOpenUrl } from "../targets/call_errors.ts";
import { exposedName, idOfExposedName, isToolId } from "./names.ts";
import { Surface } from "./surface.ts";
import type { ServerElicit, ServerLog } from "../targets/upstream/server_requests.ts";
import type { TaskCall } from "../targets/upstream/upstream_tasks.ts";
import type { ClientSink, UpstreamHub } from "../targets/upstream/upstream_hub.ts";
import type { ServerToolOf } from "./server_tool.ts";

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
}

/** A tool of PML itself (`pml:continue`, `pml:execute`, `pml:search`): not subject to permissions. */
export interface MetaTool {
  readonly id: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  /** As {@link ToolInfo.annotations}: set for a meta tool that only reads (`pml:search`). */
  readonly annotations?: Tool["annotations"];
  run(args: Record<string, unknown>, channel: CallChannel): Promise<CallToolResult>;
}

export interface GatewayDeps {
  readonly permissions: PermissionStore;
  readonly approvals: Approvals;
  readonly routing: RoutingResolver;
  /** Local targets first, in priority order; the cloud target last. */
  readonly targets: readonly Target[];
  readonly audit: AuditLog;
  readonly metaTools?: readonly MetaTool[];
  /** Namespaces `.pml.json` declares (private MCPs): always listed. */
  readonly declaredNamespaces?: readonly string[];
  /**
   * The MCP server an asked tool belongs to, said in its question (`context.mcp_server`): who may
   * answer depends on it (`approvalMode`, gateway/server_tool.ts).
   */
  readonly serverTool?: ServerToolOf;
  /** Where fronted servers' notifications outside a call go (`upstream_hub.ts`). */
  readonly hub?: UpstreamHub;
  /** Closed with the gateway (sandbox pools, process managers). */
  readonly resources?: readonly { close(): Promise<void> }[];
  /** Calls that wait for their user to sign in to a remote server (`oauth/remote_sign_in.ts`). */
  readonly signIns?: {
    owns(workflowId: string): boolean;
    continue(workflowId: string, decision: string): Promise<CallToolResult>;
  };
  /** Answers sampling requests of local MCPs; without it they are refused. */
  readonly sampling?: Sampling;
  /** Runs once, after the first `tools/list` has been answered (work kept out of the handshake). */
  readonly afterFirstList?: () => void;
  /**
   * Said in every result the gateway refuses or asks while it is set: the workspace's `.pml.json`
   * is not trusted and PML runs on the built-in defaults (`trustNotice`).
   */
  readonly notice?: string;
}

/** Tool call failed in a way the caller of a nested `mcp.*` call sees as an exception. */
export class ToolCallError extends PmlError {}

/**
 * The call pipeline (DESIGN §2): resolve the tool → permission (deny/ask/allow, with the human in
 * the loop) → routing → target. Every call takes this path, including nested `mcp.*` calls.
 */
export class Gateway {
  readonly #deps: GatewayDeps;
  /**
   * The channel of the `pml:continue` request that resumes an approved call: the resumed work
   * (its sampling relays, elicitations, progress, cancellation) runs on it, since the request that
   * was asked has been answered already (over `pml serve`, a request related to it fails with "No
   * connection established").
   */
  readonly #resuming = new AsyncLocalStorage<CallChannel>();
  /** Per tool call (its channel): what its sampling requests have used, nested calls included. */
  readonly #samplingBudgets = new WeakMap<CallChannel, SamplingBudget>();
  readonly #meta = new Map<string, MetaTool>();
  readonly #toolsChanged = new Set<() => void>();
  /** Resources, prompts, completions and logging of the servers PML fronts (`surface.ts`). */
  readonly surface: Surface;
  #names = new Map<string, string>();
  /** Tools listed with an `outputSchema` (see `callTool`). */
  #typed = new Set<string>();
  /** Tools whose definition says they run as a task (`execution.taskSupport`, see `callTool`). */
  #tasked = new Set<string>();
  #listed = false;
  #afterFirstList?: ReturnType<typeof setTimeout>;

  constructor(deps: GatewayDeps) {
    this.#deps = deps;
    this.surface = new Surface({
      targets: deps.targets,
      permissions: deps.permissions,
      approvals: deps.approvals,
      audit: deps.audit,
      namespaces: () => this.shownNamespaces(),
      hub: deps.hub,
    });
    const cont: MetaTool = {
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
    for (const m of [cont, ...(deps.metaTools ?? [])]) this.#meta.set(m.id, m);
    // After a restart, a stored tool approval runs its call again once decided: the question
    // that call would ask now must be the one stored (the same tool, arguments and what the
    // target sets up first), and what the target sets up is covered once, as in the first call.
    deps.approvals.revive = async (stored) => {
      const replay = stored.replay;
      const found = replay && await this.#targetFor(replay.tool);
      if (!replay || !found || !("target" in found)) return undefined;
      const { tool, arguments: args } = replay;
      const target = found.target;
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
        return await this.#afterApproval(
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

  get permissions(): PermissionStore {
    return this.#deps.permissions;
  }

  /** Approvals waiting for `pml:continue` (tests, status). */
  get pendingApprovals(): number {
    return this.#deps.approvals.size;
  }

  /**
   * Calls `listener` when the tools a `tools/list` would show may have changed (a remote server's
   * user signed in: its tools can be listed now); returns the unsubscribe.
   */
  onToolsChanged(listener: () => void): () => void {
    this.#toolsChanged.add(listener);
    return () => this.#toolsChanged.delete(listener);
  }

  /** Tells every connection that the tool list may have changed (`notifications/tools/list_changed`). */
  toolsChanged(): void {
    for (const listener of this.#toolsChanged) listener();
  }

  /**
   * Adds a connected client for the notifications of fronted servers (list changes, resource
   * updates, log lines outside a call); the function returned removes it.
   */
  attachClient(sink: ClientSink): () => void {
    return this.#deps.hub?.attach(sink) ?? (() => {});
  }

  /** The target named `name` (`stdio`, …): for the CLI's own work (`pml import` pins servers). */
  target(name: string): Target | undefined {
    return this.#deps.targets.find((t) => t.name === name);
  }

  /**
   * The namespaces whose MCPs are shown: those the permissions name (`allow`/`ask`) or `.pml.json`
   * declares; `undefined` (every one) under a wildcard `*`.
   */
  shownNamespaces(): ReadonlySet<string> | undefined {
    const perms = this.#deps.permissions.current;
    if (perms.allow.includes("*") || perms.ask.includes("*")) return undefined;
    return new Set([
      ...namedNamespaces(perms, ["allow", "ask"]),
      ...(this.#deps.declaredNamespaces ?? []),
    ]);
  }

  async listTools(): Promise<Tool[]> {
    const shown = this.shownNamespaces();
    const seen = new Set<string>();
    const infos: ToolInfo[] = [];
    // Asked together: the registry's and the cloud's bounded waits overlap instead of adding up.
    const lists = await Promise.all(
      this.#deps.targets.map((t) => t.listTools(shown)),
    );
    // A denied tool's definition still says whether it runs as a task: a task asked of it is
    // refused by the permissions (a failed task), not as a tool that is no task.
    const tasked = new Set<string>();
    for (const list of lists) {
      for (const info of list) {
        if (seen.has(info.id)) continue;
        seen.add(info.id);
        const support = info.execution?.taskSupport;
        if (support === "optional" || support === "required") tasked.add(info.id);
        if (this.#deps.permissions.check(info.id) !== "deny") infos.push(info);
      }
    }
    const names = new Map<string, string>();
    const typed = new Set<string>();
    const tools: Tool[] = [];
    for (const t of [...this.#meta.values(), ...infos]) {
      const name = exposedName(t.id);
      names.set(name, t.id);
      const whole = t as Partial<ToolInfo>;
      if (whole.outputSchema) typed.add(t.id);
      tools.push({
        name,
        title: whole.title ?? t.id,
        description: t.description,
        inputSchema: t.inputSchema as Tool["inputSchema"],
        ...(t.annotations ? { annotations: t.annotations } : {}),
        ...(whole.icons ? { icons: whole.icons } : {}),
        ...(whole.outputSchema ? { outputSchema: whole.outputSchema } : {}),
        ...(whole._meta ? { _meta: whole._meta } : {}),
        ...(whole.execution ? { execution: whole.execution } : {}),
      });
    }
    this.#names = names;
    this.#typed = typed;
    this.#tasked = tasked;
    const first = !this.#listed;
    this.#listed = true;
    // A timer, not a microtask: the answer is written before the hook takes the thread.
    if (first && this.#deps.afterFirstList) {
      this.#afterFirstList = setTimeout(this.#deps.afterFirstList, 0);
    }
    return tools;
  }

  /**
   * Maps an exposed name or a tool id to the tool id. A name that `tools/list` did not show (a
   * tool the permissions do not name, or a denied one) is read back as `ns__action` → `ns:action`,
   * so that it meets its permission ("unmatched → ask", "denied by .pml.json") like its tool id.
   */
  async resolveName(name: string): Promise<string | undefined> {
    if (this.#meta.has(name) || isToolId(name)) return name;
    // Listed once if never listed (a client may call before tools/list): shortened names and ids
    // with other characters than `[A-Za-z0-9_-]` only resolve through the list. After that, a
    // name the list did not show is read back as it stands, without asking every target again.
    if (!this.#names.has(name) && !this.#listed) await this.listTools();
    return this.#names.get(name) ?? idOfExposedName(name);
  }

  /** `tools/call`: the whole pipeline for a name from the client. */
  async callTool(name: string, args: unknown, channel: CallChannel = {}): Promise<CallToolResult> {
    // A name the list showed (or a tool id) resolves without a turn of the event loop.
    const toolId = this.#meta.has(name) || isToolId(name)
      ? name
      : this.#names.get(name) ?? await this.resolveName(name);
    const notice = this.#deps.notice;
    let result: CallToolResult;
    try {
      if (!toolId) throw unknownTool(name);
      if (channel.task) await this.#mayRunAsTask(toolId, name);
      result = await this.runTool(toolId, args, channel, name);
    } catch (err) {
      // A tool the untrusted part of .pml.json would bring (a server, an allow entry) is unknown
      // until a human trusts it: the error says so.
      if (notice && isPmlError(err, "UNKNOWN_TOOL")) {
        throw new PmlError("UNKNOWN_TOOL", `${err.message}. ${notice}`);
      }
      throw err;
    }
    const status = (result.structuredContent as { status?: unknown } | undefined)?.status;
    const own = status === "approval_required" || status === "waiting_for_human";
    if ((own || result.isError) && this.#typed.has(toolId!)) result = untyped(result);
    return notice && (result.isError || own) ? withNotice(result, notice) : result;
  }

  /**
   * A task asked of a tool whose definition does not say it runs as one (`execution.taskSupport`
   * absent or `forbidden`: PML's own tools, the std and cloud tools, most tools of the servers it
   * fronts) is refused before anything runs or is asked, `TASK_UNSUPPORTED` (JSON-RPC `-32601`,
   * as MCP 2025-11-25 says a server should answer); an unknown tool stays `UNKNOWN_TOOL`.
   */
  async #mayRunAsTask(toolId: string, name: string): Promise<void> {
    if (!this.#listed) await this.listTools();
    if (this.#tasked.has(toolId)) return;
    if (!this.#meta.has(toolId) && !(this.#targetNow(toolId) ?? await this.#targetFor(toolId))) {
      throw unknownTool(name, toolId);
    }
    throw new PmlError(
      "TASK_UNSUPPORTED",
      `"${name}" does not run as a task (its tools/list entry has no execution.taskSupport ` +
        `"optional" or "required"): call it without "task"`,
    );
  }

  /**
   * Runs one tool id through resolution, permission, routing and target. A tool no target
   * provides throws `UNKNOWN_TOOL` before anything is asked; a denied one is refused; one whose
   * target cannot run it now (no API key, registry unreachable) gets that error, also before any
   * question; then `ask` asks and `allow` runs. `name` is what the client called it.
   */
  async runTool(
    toolId: string,
    rawArgs: unknown,
    channel: CallChannel,
    name: string = toolId,
  ): Promise<CallToolResult> {
    const args = rawArgs ?? {};
    const notObject = () =>
      invalidArguments(toolId, `its arguments must be a JSON object, got ${JSON.stringify(args)}`);
    const meta = this.#meta.get(toolId);
    if (meta) return isObject(args) ? await meta.run(args, channel) : notObject();
    const found = this.#targetNow(toolId) ?? await this.#targetFor(toolId);
    if (!found) throw unknownTool(name, toolId);
    if (!isObject(args)) return notObject();
    const decision = this.#deps.permissions.check(toolId);
    if (decision === "deny") {
      await this.#deps.audit.write("permission_denied", { tool: toolId });
      return errorResult(`Permission denied: "${toolId}" is denied by .pml.json permissions`);
    }
    if ("unavailable" in found) {
      const { code, message } = found.unavailable;
      return errorResult(message, { status: "error", code, message });
    }
    const target = found.target;
    if (decision === "allow") return await this.#dispatch(target, toolId, args, channel);
    const question = await this.#question(target, toolId, args);
    if ("refusal" in question) return question.refusal;
    const { request, covers } = question;
    return await this.#deps.approvals.ask(
      request,
      (d, by, detail) =>
        this.#afterApproval(
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

  async #afterApproval(
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

  /**
   * The first target (in priority order) that provides `toolId`. A target that cannot tell (its
   * registry is unreachable, no API key) throws; when no later target provides the tool, that
   * error is the answer, and the tool is not reported unknown since it may exist.
   */
  async #targetFor(
    toolId: string,
  ): Promise<{ target: Target } | { unavailable: PmlError } | undefined> {
    let unavailable: PmlError | undefined;
    for (const target of this.#deps.targets) {
      try {
        if (await target.provides(toolId)) return { target };
      } catch (err) {
        unavailable ??= isPmlError(err)
          ? err
          : new PmlError("TOOL_UNAVAILABLE", `Cannot resolve "${toolId}": ${errorMessage(err)}`);
      }
    }
    return unavailable ? { unavailable } : undefined;
  }

  /**
   * What {@link Gateway.#targetFor} finds, when every target up to the one that runs `toolId`
   * knows it without waiting (`Target.providesNow`); `undefined` when one of them cannot tell.
   */
  #targetNow(toolId: string): { target: Target } | undefined {
    try {
      for (const target of this.#deps.targets) {
        const now = target.providesNow?.(toolId);
        if (now === undefined) return undefined;
        if (now) return { target };
      }
    } catch { /* `#targetFor` tells what went wrong */ }
    return undefined;
  }

  /**
   * Runs the call on its target. `covered` is a target approval the human has already answered
   * inside the tool's own question: when the target asks exactly it, once, it is not asked again.
   */
  async #dispatch(
    target: Target,
    toolId: string,
    args: Record<string, unknown>,
    channel: CallChannel,
    covered?: { request: ApprovalRequest; by: DecidedBy },
  ): Promise<CallToolResult> {
    const call = splitCall(toolId, args);
    try {
      return await target.call(call, {
        callTool: (id, a) => this.#nested(id, a, channel),
        progress: channel.progress,
        signal: channel.signal,
        sample: (server, params, opts) => this.#sample(server, params, opts, channel),
        openUrl: channel.openUrl,
        serverElicit: channel.serverElicit,
        log: channel.log,
        task: channel.task,
        clientSession: channel.clientSession,
        ask: (request, resume) => {
          if (covered && sameRequest(covered.request, request)) {
            const by = covered.by;
            covered = undefined;
            return resume("yes", by);
          }
          return this.#deps.approvals.ask(request, resume, { elicit: channel.elicit });
        },
      });
    } catch (err) {
      // The user must open a URL (-32042): the agent's client gets the error and its URL.
      if (asksToOpenUrl(err)) throw err;
      return errorResult(`"${toolId}" failed: ${errorMessage(err)}`);
    }
  }

  /**
   * A sampling request of the MCP `server`, made during a call on `channel`: the human is asked
   * through that channel's elicitation, tools the model uses run through this pipeline on it.
   */
  async #sample(
    server: string,
    params: CreateMessageRequestParams,
    opts: SampleOptions,
    channel: CallChannel,
  ): Promise<CreateMessageResult> {
    const sampling = this.#deps.sampling;
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
          await this.#deps.approvals.ask(request, (d) => {
            decided = d;
            return Promise.resolve({ content: [] });
          }, { elicit });
          return decided;
        }
        : undefined,
      tools: {
        list: async () =>
          (await this.listTools()).map((t) => ({
            id: this.#names.get(t.name) ?? t.name,
            description: t.description ?? "",
            inputSchema: t.inputSchema,
          })),
        run: (toolId, args) => this.runTool(toolId, args, channel),
      },
    });
  }

  /** A nested `mcp.ns.action()` call from sandboxed code: same pipeline, result unwrapped. */
  async #nested(toolId: string, args: unknown, channel: CallChannel): Promise<unknown> {
    if (!isToolId(toolId)) throw new ToolCallError("UNKNOWN_TOOL", `Unknown tool "${toolId}"`);
    const result = await this.runTool(toolId, args, channel);
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
      if (asksToOpenUrl(err)) throw err; // as in #dispatch
      return errorResult(errorMessage(err));
    }
  }

  /** Stops every target and resource (sandboxes, subprocesses). */
  async close(): Promise<void> {
    clearTimeout(this.#afterFirstList);
    await Promise.allSettled([
      ...this.#deps.targets.map((t) => t.close()),
      ...(this.#deps.resources ?? []).map((r) => r.close()),
    ]);
  }
}

/**
 * `result` with `notice` where every client's model reads it: in `structuredContent` (Claude Code
 * and Codex hand the model that alone when it is present) and in the first text block (what the
 * others show). A first block that is the structured content's JSON stays that JSON, with the
 * notice as its `notice` field.
 */
function withNotice(result: CallToolResult, notice: string): CallToolResult {
  const structured = result.structuredContent;
  const noted = structured && { ...structured, notice };
  const [first, ...rest] = result.content;
  const text = first?.type !== "text"
    ? notice
    : noted && first.text === JSON.stringify(structured)
    ? JSON.stringify(noted)
    : `${first.text}\n\n${notice}`;
  return {
    ...result,
    ...(noted ? { structuredContent: noted } : {}),
    content: [{ type: "text", text }, ...(first?.type === "text" ? rest : result.content)],
  };
}

/**
 * A typed tool's result that is not its typed output (PML's approval or refusal, the tool's own
 * error): an error without `structuredContent`, which a client checks against the tool's output
 * schema whenever it is present (the SDK's `Client.callTool` does, errors included). Its text
 * says the same (docs/surface.md).
 */
function untyped(result: CallToolResult): CallToolResult {
  const { structuredContent: _dropped, ...rest } = result;
  return { ...rest, isError: true };
}

function splitCall(toolId: string, args: Record<string, unknown>): ToolCall {
  const colon = toolId.indexOf(":");
  return { toolId, ns: toolId.slice(0, colon), action: toolId.slice(colon + 1), args };
}

/** The same question: type, words and context (what was shown is what is covered). */
function sameRequest(a: ApprovalRequest, b: ApprovalRequest): boolean {
  return a.type === b.type && a.description === b.description &&
    JSON.stringify(a.context) === JSON.stringify(b.context);
}

/** The same part only a human sees, and the same id "always" allows. */
function sameHuman(a: ApprovalRequest, b: ApprovalRequest): boolean {
  return a.allows === b.allows && JSON.stringify(a.forHuman) === JSON.stringify(b.forHuman);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The `UNKNOWN_TOOL` error (JSON-RPC `-32602` at the MCP face). */
function unknownTool(name: string, toolId?: string): PmlError {
  const id = toolId && toolId !== name ? ` (tool id "${toolId}")` : "";
  return new PmlError(
    "UNKNOWN_TOOL",
    `Unknown tool "${name}"${id}: no MCP of this workspace provides it; see tools/list`,
  );
}
