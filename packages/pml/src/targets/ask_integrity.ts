import type { CallToolResult } from "../sdk/types.ts";
import type { ChangedPin } from "../registry/mcp_pins.ts";
import { integrityRequest } from "../registry/integrity_request.ts";
import { type CallContext, errorResult, type ToolCall } from "./target.ts";

/**
 * An `integrity` approval for a changed pin (the stdio and remote targets): "no" keeps the old pin
 * and runs nothing; "yes" or "always" records the new pin and continues with `next`. `newTool`:
 * the called tool is one that appeared after pinning.
 */
export async function askIntegrity(
  check: ChangedPin,
  call: ToolCall,
  ctx: CallContext,
  newTool: boolean,
  next: () => Promise<CallToolResult>,
): Promise<CallToolResult> {
  return await ctx.ask(
    integrityRequest(call.toolId, [check], { newTool }),
    async (decision) => {
      if (decision === "no") {
        await check.refuse();
        return errorResult(
          `Integrity check failed for "${call.toolId}": the changed ${
            check.what === "metadata" ? "metadata" : "tool definitions"
          } of ${check.name} were refused; nothing ran and .pml/mcp.lock keeps the old pin`,
          { status: "error", code: "INTEGRITY_REFUSED", name: check.name },
        );
      }
      await check.accept();
      return await next();
    },
  );
}
