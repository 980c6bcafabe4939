import { commonToolResult } from "./common_shapes.ts";
import { type CallToolResult, CallToolResultSchema } from "./types.ts";

/**
 * Results of `tools/call` already checked against the SDK's whole `CallToolResultSchema`, as that
 * parse returned them: the gateway's MCP server ({@link RequestFirstServer}) sends one of these
 * objects on without checking it a second time. Anything else it gets (PML's own results, one
 * rebuilt on the way, a cloud tool's) is checked there as the SDK's `Server` does.
 */
const checked = new WeakSet<object>();

/**
 * Checks what a server sent as a tool's result against the SDK's `CallToolResultSchema`: the
 * parsed result (marked as checked), or `undefined` when it does not conform. A result of the
 * common shape (text blocks, structured content) gets the schema's output from
 * `commonToolResult` without running it (`common_shapes.ts`).
 */
export function checkToolResult(value: unknown): CallToolResult | undefined {
  const common = commonToolResult(value);
  if (common) {
    checked.add(common);
    return common;
  }
  const parsed = CallToolResultSchema.safeParse(value);
  if (!parsed.success) return undefined;
  checked.add(parsed.data);
  return parsed.data;
}

/** `value` is a result {@link checkToolResult} returned (the same object). */
export function isCheckedToolResult(value: unknown): boolean {
  return typeof value === "object" && value !== null && checked.has(value);
}
