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
 * Reads `{code, intent?, timeout_ms?}`. A missing `code` counts as empty (the analysis answers
 * `EMPTY_CODE`); a `code` that is not a string, an `intent` that is not one, or a `timeout_ms` that
 * is not a positive number is refused with an `INVALID_ARGUMENTS` result naming the value.
 */
export function parseExecuteArgs(
  args: Record<string, unknown>,
  maxTimeoutMs: number,
): { ok: true; value: ExecuteArgs } | { ok: false; result: CallToolResult } {
  const invalid = (message: string) => ({
    ok: false as const,
    result: failureResult("INVALID_ARGUMENTS", `Invalid arguments for "pml:execute": ${message}`),
  });
  if (args.code !== undefined && typeof args.code !== "string") {
    return invalid(`code must be a string (a TypeScript function body), got ${show(args.code)}`);
  }
  if (args.intent !== undefined && typeof args.intent !== "string") {
    return invalid(`intent must be a string, got ${show(args.intent)}`);
  }
  const code = (args.code as string | undefined) ?? "";
  const intent = args.intent as string | undefined;
  const t = args.timeout_ms;
  if (t !== undefined && (typeof t !== "number" || !(t > 0))) {
    return invalid(`timeout_ms must be a positive number, got ${show(t)}`);
  }
  const timeoutMs = Math.min(maxTimeoutMs, (t as number | undefined) ?? maxTimeoutMs);
  return { ok: true, value: { code, intent, timeoutMs } };
}

/** A value as JSON, cut to 80 characters (it is quoted back in an error). */
function show(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}
