import type { CallToolResult, Tool } from "../sdk/types.ts";
import type { Sampling } from "../sampling/sampling.ts";
import type { AuditLog } from "../audit/audit.ts";
import { errorMessage, isPmlError, PmlError } from "../errors.ts";
import type { Approvals } from "../permission/approvals.ts";
import type { PermissionStore } from "../permission/permission_store.ts";
import type { RoutingResolver } from "../routing/routing.ts";
import { errorResult, invalidArguments, type Target } from "../targets/target.ts";
import { asksToOpenUrl } from "../targets/call_errors.ts";
import { isToolId } from "./names.ts";
import { Surface } from "./surface.ts";
import type { ClientSink, UpstreamHub } from "../targets/upstream/upstream_hub.ts";
import type { ServerToolOf } from "./server_tool.ts";
import {
  type CallChannel,
  CallRelay,
  type Covered,
  type MetaTool,
  type StoredCall,
} from "./call_relay.ts";
import { splitCall, ToolApproval } from "./tool_approval.ts";
import { ToolList } from "./tool_list.ts";

export { type CallChannel, type MetaTool, ToolCallError } from "./call_relay.ts";

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

/**
 * The call pipeline (DESIGN §2): resolve the tool → permission (deny/ask/allow, with the human in
 * the loop) → routing → target. Every call takes this path, including nested `mcp.*` calls.
 */
export class Gateway {
  readonly #deps: GatewayDeps;
  readonly #meta = new Map<string, MetaTool>();
  readonly #toolsChanged = new Set<() => void>();
  /** What `tools/list` shows, and the names it shows them under (`tool_list.ts`). */
  readonly #list: ToolList;
  /** An `ask`ed tool's question and what its answer does, `pml:continue` (`tool_approval.ts`). */
  readonly #approval: ToolApproval;
  /** What a call can reach, as the context its target runs with (`call_relay.ts`). */
  readonly #relay: CallRelay;
  /** Resources, prompts, completions and logging of the servers PML fronts (`surface.ts`). */
  readonly surface: Surface;

  constructor(deps: GatewayDeps) {
    this.#deps = deps;
    this.#list = new ToolList({
      targets: deps.targets,
      permissions: deps.permissions,
      meta: this.#meta,
      declaredNamespaces: deps.declaredNamespaces,
      afterFirstList: deps.afterFirstList,
    });
    this.surface = new Surface({
      targets: deps.targets,
      permissions: deps.permissions,
      approvals: deps.approvals,
      audit: deps.audit,
      namespaces: () => this.shownNamespaces(),
      hub: deps.hub,
    });
    this.#relay = new CallRelay({
      approvals: deps.approvals,
      sampling: deps.sampling,
      pipeline: {
        runTool: (toolId, args, channel) => this.runTool(toolId, args, channel),
        listTools: async () =>
          (await this.listTools()).map((t) => ({
            id: this.#list.idOf(t.name) ?? t.name,
            description: t.description ?? "",
            inputSchema: t.inputSchema,
          })),
      },
    });
    this.#approval = new ToolApproval(
      deps,
      (target, toolId, args, channel, covered, firstUse) =>
        this.#dispatch(target, toolId, args, channel, covered, firstUse),
      (toolId) => this.#targetFor(toolId),
    );
    for (const m of [this.#approval.continueTool, ...(deps.metaTools ?? [])]) {
      this.#meta.set(m.id, m);
    }
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
    return this.#list.shownNamespaces();
  }

  listTools(): Promise<Tool[]> {
    return this.#list.list();
  }

  /**
   * Maps an exposed name or a tool id to the tool id. A name that `tools/list` did not show (a
   * tool the permissions do not name, or a denied one) is read back as `ns__action` → `ns:action`,
   * so that it meets its permission ("unmatched → ask", "denied by .pml.json") like its tool id.
   */
  resolveName(name: string): Promise<string | undefined> {
    return this.#list.resolveName(name);
  }

  /** `tools/call`: the whole pipeline for a name from the client. */
  async callTool(name: string, args: unknown, channel: CallChannel = {}): Promise<CallToolResult> {
    // A name the list showed (or a tool id) resolves without a turn of the event loop.
    const toolId = this.#meta.has(name) || isToolId(name)
      ? name
      : this.#list.idOf(name) ?? await this.resolveName(name);
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
    if ((own || result.isError) && this.#list.typed(toolId!)) result = untyped(result);
    return notice && (result.isError || own) ? withNotice(result, notice) : result;
  }

  /**
   * A task asked of a tool whose definition does not say it runs as one (`execution.taskSupport`
   * absent or `forbidden`: PML's own tools, the std and cloud tools, most tools of the servers it
   * fronts) is refused before anything runs or is asked, `TASK_UNSUPPORTED` (JSON-RPC `-32601`,
   * as MCP 2025-11-25 says a server should answer); an unknown tool stays `UNKNOWN_TOOL`.
   */
  async #mayRunAsTask(toolId: string, name: string): Promise<void> {
    if (!this.#list.listed) await this.listTools();
    if (this.#list.tasked(toolId)) return;
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
    // Allowed: what its target asks first (a brought server's first run) is stored with the call.
    if (decision === "allow") {
      return await this.#dispatch(target, toolId, args, channel, undefined, {
        tool: toolId,
        arguments: args,
      });
    }
    return await this.#approval.ask(target, toolId, args, channel);
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
   * Runs the call on its target. `covered` and `firstUse`: see `CallRelay.context`.
   */
  async #dispatch(
    target: Target,
    toolId: string,
    args: Record<string, unknown>,
    channel: CallChannel,
    covered?: Covered,
    firstUse?: StoredCall,
  ): Promise<CallToolResult> {
    try {
      const ctx = this.#relay.context(channel, covered, firstUse);
      return await target.call(splitCall(toolId, args), ctx);
    } catch (err) {
      // The user must open a URL (-32042): the agent's client gets the error and its URL.
      if (asksToOpenUrl(err)) throw err;
      return errorResult(`"${toolId}" failed: ${errorMessage(err)}`);
    }
  }

  /** Stops every target and resource (sandboxes, subprocesses). */
  async close(): Promise<void> {
    this.#list.close();
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
