import type { CallToolResult } from "../sdk/types.ts";
import type { Routing } from "../routing/routing.ts";

/** Failure codes of `pml:execute` (DESIGN §9). */
export type ExecuteErrorCode =
  | "SYNTAX_ERROR"
  | "EMPTY_CODE"
  | "EXECUTION_TIMEOUT"
  | "RPC_TIMEOUT"
  | "UNKNOWN_TOOL"
  | "PERMISSION_DENIED"
  | "CLOUD_UNREACHABLE"
  | "CODE_ERROR"
  /** `pml:execute`'s own arguments, or a nested call's, that the tool cannot take. */
  | "INVALID_ARGUMENTS"
  /** Server only: the code needs the package (it calls tools of the user's machine). */
  | "CLIENT_TOOLS_REQUIRE_PACKAGE";

/** Codes a nested call can fail with that, left uncaught, become the execution's code. */
export const CALL_ERROR_CODES: ReadonlySet<string> = new Set([
  "RPC_TIMEOUT",
  "UNKNOWN_TOOL",
  "PERMISSION_DENIED",
  "CLOUD_UNREACHABLE",
  "INVALID_ARGUMENTS",
]);

/** One `mcp.*` call of an execution, as reported in the result. */
export interface CallReport {
  tool: string;
  routing: Routing;
  ms: number;
  /** True when the outcome came from the journal of an earlier, paused run. */
  replayed?: boolean;
}

/** `{"status":"success","result","calls"}` as text and `structuredContent`. */
export function successResult(result: unknown, calls: CallReport[]): CallToolResult {
  const body = { status: "success", result: result ?? null, calls };
  return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
}

/** `{"status":"error","code","message"}` with `isError: true`. */
export function failureResult(
  code: ExecuteErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
): CallToolResult {
  const body = { status: "error", code, message, ...extra };
  return {
    content: [{ type: "text", text: JSON.stringify(body) }],
    structuredContent: body,
    isError: true,
  };
}
