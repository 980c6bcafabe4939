import type { CallToolResult } from "../sdk/types.ts";
import { failureResult } from "./result.ts";

/** Checked `pml:execute` arguments (DESIGN §9). */
export interface ExecuteArgs {
  readonly code: string;
  readonly intent?: string;
  /** Whole-execution bound: `timeout_ms` when given, never above the caller's maximum. */
  readonly timeoutMs: number;
}

/** JSON Schema of the `pml:execute` input, as both programs list it. */
export function executeInputSchema(maxTimeoutMs: number): Record<string, unknown> & {
  type: "object";
} {
  return {
    type: "object",
    properties: {
      code: { type: "string", description: "TypeScript function body; use mcp.ns.action(args)" },
      intent: { type: "string", description: "What the code is meant to do (for the record)" },
      timeout_ms: { type: "number", description: `At most ${maxTimeoutMs} ms` },
    },
    required: ["code"],
  };
}

/**
 * Reads `{code, intent?, timeout_ms?}`. A missing or non-string `code` counts as empty (the
 * analysis answers `EMPTY_CODE`); a `timeout_ms` that is not a positive number is refused with a
 * `CODE_ERROR` result naming the value.
 */
export function parseExecuteArgs(
  args: Record<string, unknown>,
  maxTimeoutMs: number,
): { ok: true; value: ExecuteArgs } | { ok: false; result: CallToolResult } {
  const code = typeof args.code === "string" ? args.code : "";
  const intent = typeof args.intent === "string" ? args.intent : undefined;
  const t = args.timeout_ms;
  if (t !== undefined && (typeof t !== "number" || !(t > 0))) {
    return {
      ok: false,
      result: failureResult(
        "CODE_ERROR",
        `timeout_ms must be a positive number, got ${JSON.stringify(t)}`,
      ),
    };
  }
  const timeoutMs = Math.min(maxTimeoutMs, (t as number | undefined) ?? maxTimeoutMs);
  return { ok: true, value: { code, intent, timeoutMs } };
}
