/**
 * Which MCP server a tool belongs to, for the question about it (docs/approvals.md "Who decides"):
 * a server the user brought (`private_mcps`: an npm package, a raw command, a remote URL) or one of
 * a registry (stdio from the registries or the built-in catalogue, http proxied by the PML server)
 * acts as that server decides, so in the default mode its approval is the human's, unless the
 * definition pinned in `.pml/mcp.lock` (the one the human saw at import or first use) says that it
 * only reads. PML's own tools, registry deno modules (sandboxed code with no I/O of its own, whose
 * every `mcp.*` call is asked again) and the platform's cloud tools are none of these.
 *
 * @module
 */
import type { McpPins } from "../registry/mcp_pins.ts";
import type { HttpPins } from "../targets/cloud/http_pins.ts";
import type { Target } from "../targets/target.ts";

/** What a tool approval's `context.mcp_server` says (the agent may read it: names and a flag). */
export interface ServerTool {
  /** The server's namespace (`fs` for `fs:write_file`). */
  readonly name: string;
  /** The pinned definition says `readOnlyHint: true` (and not `destructiveHint: true`). */
  readonly read_only: boolean;
}

/** Finds the {@link ServerTool} of a call about to be asked; `undefined` for PML's own tools. */
export type ServerToolOf = (toolId: string, target: Target) => Promise<ServerTool | undefined>;

/** Targets whose every tool is an MCP server's (by `Target.name`). */
const SERVER_TARGETS: ReadonlySet<string> = new Set(["stdio", "remote"]);

/**
 * The {@link ServerToolOf} of a gateway: stdio and remote targets run only MCP servers; the cloud
 * target runs http MCPs of a registry beside the platform's own tools, told apart by `http`.
 */
export function serverToolOf(deps: { pins: McpPins; http?: HttpPins }): ServerToolOf {
  return async (toolId, target) => {
    const colon = toolId.indexOf(":");
    const ns = toolId.slice(0, colon);
    const isServer = SERVER_TARGETS.has(target.name) ||
      (target.name === "cloud" && await deps.http?.isHttpMcp(ns).catch(() => false));
    if (!isServer) return undefined;
    const readOnly = await deps.pins.pinnedReadOnly(`pml.mcp.${ns}.server`, toolId.slice(colon + 1))
      .catch(() => false);
    return { name: ns, read_only: readOnly };
  };
}

/** The `mcp_server` of an approval's context, when it has one. */
export function serverToolIn(context: Record<string, unknown>): ServerTool | undefined {
  const s = context.mcp_server as Partial<ServerTool> | undefined;
  return s && typeof s === "object" && typeof s.name === "string"
    ? { name: s.name, read_only: s.read_only === true }
    : undefined;
}
