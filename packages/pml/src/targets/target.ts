import type {
  CallToolResult,
  CreateMessageRequestParams,
  CreateMessageResult,
  Tool,
} from "../sdk/types.ts";
import type { ApprovalRequest, HumanDetail, Resume } from "../permission/approvals.ts";
import type { Routing } from "../routing/routing.ts";
import { z } from "zod";
import type { UpstreamSession } from "./upstream/upstream_session.ts";
import type { ServerElicit, ServerLog } from "./upstream/server_requests.ts";
import type { TaskCall } from "./upstream/upstream_tasks.ts";

/** One tool as `tools/list` shows it, keyed by tool id (`ns:action`). */
export interface ToolInfo {
  readonly id: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly routing: Routing;
  /**
   * MCP tool annotations, for tools whose behaviour PML itself knows (its std tools, and the hints
   * the PML cloud states for the tools it computes): clients use `readOnlyHint` to run read-only
   * calls side by side (Claude Code) and to allow them in read-only modes (Codex). A server the
   * user brought (`private_mcps`) passes on its own, as pinned (a change is the human's decision);
   * a registry server's are not passed on.
   */
  readonly annotations?: Tool["annotations"];
  /**
   * The rest of a fronted server's definition, as it gave it and as pinned (docs/surface.md):
   * `title` (the tool id when absent), `icons`, `outputSchema` (its results carry
   * `structuredContent`), `_meta` (an MCP App's `ui.resourceUri`, made PML's).
   */
  readonly title?: string;
  readonly icons?: Tool["icons"];
  readonly outputSchema?: Tool["outputSchema"];
  readonly _meta?: Tool["_meta"];
  /** `execution.taskSupport` of a fronted server's tool that runs as an MCP task (docs/surface.md). */
  readonly execution?: Tool["execution"];
}

/** A resolved call: tool id split into namespace and action, arguments as an object. */
export interface ToolCall {
  readonly toolId: string;
  readonly ns: string;
  readonly action: string;
  readonly args: Record<string, unknown>;
}

/**
 * The client's URL-mode elicitation: shows the user a URL (a sign-in), never the model; `ask`
 * resolves to the user's answer (`accept`: they went to open it), `done` tells the client that the
 * flow it opened has ended.
 */
export interface OpenUrl {
  ask(
    url: string,
    message: string,
    elicitationId: string,
  ): Promise<"accept" | "decline" | "cancel">;
  done(elicitationId: string): Promise<void>;
}

/** What a target may use while running a call. */
export interface CallContext {
  /** Runs a nested `mcp.ns.action(args)` call through the whole pipeline (permission, routing). */
  readonly callTool: (toolId: string, args: unknown) => Promise<unknown>;
  /** Reports progress to the client, when it asked for it. */
  readonly progress?: (progress: number, total?: number, message?: string) => Promise<void>;
  readonly signal?: AbortSignal;
  /**
   * Asks the human (a `dependency`, `integrity` or `api_key_required` approval): through
   * elicitation inside this call when the client supports it, otherwise the call returns the
   * `approval_required` result and `resume` runs when the agent answers with `pml:continue`.
   */
  readonly ask: (request: ApprovalRequest, resume: Resume) => Promise<CallToolResult>;
  /** The client's URL-mode elicitation, when it has one (a sign-in shown to the user at once). */
  readonly openUrl?: OpenUrl;
  /**
   * Answers a `sampling/createMessage` the MCP behind this call sent (see `sampling/sampling.ts`):
   * permission, then the client's own sampling or the user's LLM key. Throws a `PmlError` that
   * the MCP receives as its request's error.
   */
  readonly sample?: (
    server: string,
    params: CreateMessageRequestParams,
    opts: SampleOptions,
  ) => Promise<CreateMessageResult>;
  /**
   * Relays an `elicitation/create` of the MCP behind this call to the client (its words labelled
   * as that server's by the session, docs/surface.md); absent when the client does not elicit.
   */
  readonly serverElicit?: ServerElicit;
  /** Relays a log line of the MCP behind this call on the call's own stream. */
  readonly log?: ServerLog;
  /** Present when the client runs this call as an MCP task (docs/surface.md, "Tasks"). */
  readonly task?: TaskCall;
  /**
   * The MCP session of PML's client the call came from (one per connection): a fronted server's
   * question is relayed to that session's client only (docs/surface.md).
   */
  readonly clientSession?: object;
}

/** How a sampling request of an MCP is to be answered (see {@link CallContext.sample}). */
export interface SampleOptions {
  /** The gateway tools the model may use (permission patterns of the MCP's metadata). */
  readonly allowedToolPatterns: readonly string[];
  readonly signal?: AbortSignal;
  /** Present when the MCP asked for progress of its request. */
  readonly onprogress?: (p: { progress: number; total?: number; message?: string }) => void;
}

/**
 * What a target adds to the gateway's question about an `ask` tool, so that the human is asked
 * once: words for the description, context, and the target's own approval that this answer also
 * covers (a first install), which is then not asked again in the same call.
 */
export interface Preflight {
  readonly description: string;
  readonly context: Record<string, unknown>;
  readonly covers?: ApprovalRequest;
  /**
   * What only the human's channels show of the question (an instruction file's new content): the
   * question is then not elicited (see `ApprovalRequest.forHuman`).
   */
  readonly forHuman?: HumanDetail;
}

/**
 * A target's answer that the call cannot run whatever the human says (a missing BYOK key, a
 * missing required variable): the gateway answers it instead of asking.
 */
export interface PreflightRefusal {
  readonly refusal: { readonly code: string; readonly message: string };
}

/**
 * The MCP servers a target fronts (stdio dependencies, raw commands, remote servers): their
 * sessions, for what the gateway passes on beyond tools (resources, prompts, completions, logging;
 * docs/surface.md).
 */
export interface Upstreams {
  /**
   * Where the servers' data is: `local`, a process on this machine (reading it is a read of local
   * data); `remote`, a server reached over the network (reading it is a call out).
   */
  readonly origin: "local" | "remote";
  /** The servers of these namespaces (all it fronts without). */
  servers(namespaces?: ReadonlySet<string>): Promise<string[]>;
  /**
   * The session of `server`, started or connected if needed, when that asks nothing now (its run
   * approved, its variables set); `undefined` otherwise.
   */
  session(server: string): Promise<UpstreamSession | undefined>;
}

/**
 * Where a call runs (DESIGN §8). Implementations are named by mechanism: `StdTarget` (built-in
 * tools in a sandbox), `DenoModuleTarget`, `StdioTarget`, `CloudTarget`.
 */
export interface Target {
  readonly name: string;
  /** Tools to show in `tools/list` for the given namespaces (`undefined`: all it knows). */
  listTools(namespaces?: ReadonlySet<string>): Promise<ToolInfo[]>;
  /** True when this target runs `toolId`. */
  provides(toolId: string): Promise<boolean>;
  /**
   * What {@link Target.provides} answers, when the target knows it without waiting (nothing to
   * load, nothing that can fail); `undefined` when only `provides` can tell. The gateway finds a
   * warm call's target without a turn of the event loop.
   */
  providesNow?(toolId: string): boolean | undefined;
  call(call: ToolCall, ctx: CallContext): Promise<CallToolResult>;
  /**
   * What the question about an `ask` tool should also say (and cover), see {@link Preflight}; or
   * that the call cannot run, answered before any question ({@link PreflightRefusal}).
   */
  preflight?(call: ToolCall): Promise<Preflight | PreflightRefusal | undefined>;
  /** Present on the targets that front MCP servers, see {@link Upstreams}. */
  readonly upstreams?: Upstreams;
  /** Stops every process the target started. */
  close(): Promise<void>;
}

/**
 * Wraps a module's return value as a `CallToolResult` (DESIGN §7): a result that already is one is
 * passed through; a string becomes text; anything else becomes JSON text plus `structuredContent`.
 */
export function toCallToolResult(value: unknown): CallToolResult {
  if (
    value && typeof value === "object" && !Array.isArray(value) &&
    Array.isArray((value as { content?: unknown }).content)
  ) {
    return value as CallToolResult;
  }
  if (typeof value === "string") return { content: [{ type: "text", text: value }] };
  const structured = value && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : { result: value ?? null };
  return {
    content: [{ type: "text", text: JSON.stringify(value ?? null) }],
    structuredContent: structured,
  };
}

/** The text content of a result, joined. */
export function resultText(result: CallToolResult): string {
  return result.content?.map((c) => (c.type === "text" ? c.text : "")).join("") ?? "";
}

/**
 * The value a result carries, the inverse of {@link toCallToolResult}: `structuredContent` (a lone
 * `result` key unwrapped), else the text. This is what a nested `mcp.ns.action()` call returns.
 */
export function fromCallToolResult(result: CallToolResult): unknown {
  const sc = result.structuredContent as Record<string, unknown> | undefined;
  if (sc) return "result" in sc && Object.keys(sc).length === 1 ? sc.result : sc;
  return resultText(result);
}

/** A tool failure as a result the agent can read (`isError: true`). */
export function errorResult(message: string, structured?: Record<string, unknown>): CallToolResult {
  return {
    content: [{ type: "text", text: message }],
    isError: true,
    ...(structured ? { structuredContent: structured } : {}),
  };
}

/**
 * The failure of a call whose arguments the tool cannot take (wrong type, missing, not an object):
 * code `INVALID_ARGUMENTS` (inside `pml:execute` too, where it becomes the execution's code when
 * the code does not catch it), and a message that names the tool.
 */
export function invalidArguments(toolId: string, reason: string): CallToolResult {
  const message = `Invalid arguments for "${toolId}": ${reason}`;
  return errorResult(message, { status: "error", code: "INVALID_ARGUMENTS", message });
}

/**
 * The failure of a call refused by a wall (a path outside the workspace, a control file): code
 * `PERMISSION_DENIED`, inside `pml:execute` too.
 */
export function permissionDenied(message: string): CallToolResult {
  return errorResult(message, { status: "error", code: "PERMISSION_DENIED", message });
}

/**
 * The shape of a `tools/call` result a target relies on: an object with a content list. Targets
 * that relay another MCP server's result (stdio dependencies, the cloud) send `tools/call` with
 * `request()` and this schema rather than `callTool()`: the result goes on to the agent through
 * the gateway's MCP server, which checks it against the whole `CallToolResult` schema, and the
 * agent's client checks structured content against the tool's output schema. Parsing it a third
 * time here was a third of the gateway's CPU per call.
 */
export const ToolResultShape = z.looseObject({ content: z.array(z.unknown()).default([]) });
