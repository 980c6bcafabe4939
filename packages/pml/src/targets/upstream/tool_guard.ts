/**
 * The rug-pull guard of a fronted server, the same for every target: its own `tools/list`, read on
 * the session, hashed per tool and compared with the pins in `.pml/mcp.lock` (recorded on first
 * use); a changed definition, or a tool that appeared after pinning, is an `integrity` question to
 * the human before the call runs (DESIGN §12).
 *
 * @module
 */
import type { CallToolResult, Tool } from "../../sdk/types.ts";
import type { ChangedPin, McpPins, ToolDefinition } from "../../registry/mcp_pins.ts";
import { askIntegrity } from "../ask_integrity.ts";
import type { CallContext, ToolCall } from "../target.ts";
import type { VerifyTools } from "./upstream_session.ts";

/** The lock entry of a fronted server's pins. */
export function serverLockName(server: string): string {
  return `pml.mcp.${server}.server`;
}

/** A changed tool list of a running server (caught by {@link guardedCall}, which asks the human). */
export class ToolsChanged extends Error {
  constructor(readonly check: ChangedPin) {
    super(`The tool definitions of ${check.name} changed since they were pinned`);
  }
}

/** What is pinned of the definitions a server lists. */
export function pinnedDefinitions(tools: readonly Tool[]): ToolDefinition[] {
  return tools.map((t) => ({
    name: t.name,
    description: t.description ?? "",
    inputSchema: t.inputSchema as Record<string, unknown>,
    ...(t.annotations ? { annotations: t.annotations as Record<string, unknown> } : {}),
    ...(t.title !== undefined ? { title: t.title } : {}),
    ...(t.icons !== undefined ? { icons: t.icons } : {}),
    ...(t.outputSchema !== undefined
      ? { outputSchema: t.outputSchema as Record<string, unknown> }
      : {}),
    ...(t._meta !== undefined ? { _meta: t._meta } : {}),
    ...pinnedExecution(t.execution),
  }));
}

/**
 * A tool's `execution` as pinned: without `taskSupport: "forbidden"`, the default every SDK server
 * states for a tool that is no task (so such a definition hashes as before MCP tasks were passed).
 */
function pinnedExecution(execution: Tool["execution"]): { execution?: Record<string, unknown> } {
  if (!execution) return {};
  const { taskSupport, ...rest } = execution;
  const kept = taskSupport === undefined || taskSupport === "forbidden"
    ? rest
    : { ...rest, taskSupport };
  return Object.keys(kept).length ? { execution: kept } : {};
}

/**
 * The guard of `server`'s session: throws {@link ToolsChanged} when its tools differ from their
 * pins. Nothing is checked once the server's metadata pin was dropped meanwhile.
 */
export function toolGuard(pins: McpPins, server: string): VerifyTools {
  const name = serverLockName(server);
  return async (listTools) => {
    if (!(await pins.locked(name))) return;
    const check = await pins.checkTools(name, pinnedDefinitions(await listTools()));
    if (check.kind === "changed") throw new ToolsChanged(check);
  };
}

/**
 * Runs `run` (a call through a guarded session); when the guard finds a change, asks the human
 * (`integrity`) and runs it again once approved. The question says whether the called tool is
 * one that appeared after pinning.
 */
export async function guardedCall(
  call: ToolCall,
  ctx: CallContext,
  run: () => Promise<CallToolResult>,
): Promise<CallToolResult> {
  try {
    return await run();
  } catch (err) {
    if (!(err instanceof ToolsChanged)) throw err;
    const check = err.check;
    const newTool = check.differences.some((d) => d.kind === "added" && d.subject === call.action);
    return await askIntegrity(check, call, ctx, newTool, () => guardedCall(call, ctx, run));
  }
}
