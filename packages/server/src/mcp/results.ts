/**
 * Tool results on the wire: a module's return value becomes text + `structuredContent`
 * (DESIGN §7), failures become `isError` results with a JSON `{status, code, message}` body.
 *
 * @module
 */
import type { CallToolResult } from "./sdk/types.ts";

/** True when `value` already has the shape of a `CallToolResult` (a `content` array). */
export function isCallToolResult(value: unknown): value is CallToolResult {
  return typeof value === "object" && value !== null && !Array.isArray(value) &&
    Array.isArray((value as { content?: unknown }).content);
}

/**
 * Wraps a JSON-serialisable value: strings as they are, anything else as JSON text;
 * `structuredContent` is the value itself when it is an object, else `{"result": value}`.
 */
export function valueResult(value: unknown): CallToolResult {
  if (isCallToolResult(value)) return value;
  const json = value === undefined ? null : value;
  const text = typeof json === "string" ? json : JSON.stringify(json);
  const structured = typeof json === "object" && json !== null && !Array.isArray(json)
    ? json as Record<string, unknown>
    : { result: json };
  return { content: [{ type: "text", text }], structuredContent: structured };
}

/** An `isError` result carrying `{"status":"error","code","message",…extra}`. */
export function errorResult(
  code: string,
  message: string,
  extra: Record<string, unknown> = {},
): CallToolResult {
  const body = { status: "error", code, message, ...extra };
  return {
    isError: true,
    content: [{ type: "text", text: JSON.stringify(body) }],
    structuredContent: body,
  };
}
