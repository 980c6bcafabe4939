import type { CallToolResult } from "./types.ts";

/**
 * Exact shortcuts for three of the SDK's zod checks on a tool call's hot path: the protocol layer's
 * `isJSONRPCRequest` (a strict object: zod's slow path), the `CallToolRequestSchema` parse of a
 * `tools/call` and the `CallToolResultSchema` parse of a stdio dependency's result. Together ~60 µs
 * of a call one at a time (docs/speed.md, row 6a).
 *
 * Each knows only the common shape of its message (the one clients and servers send every call)
 * and answers `undefined` (or `false`) for anything else, which the caller then gives to the SDK's
 * own schema. So nothing the schema refuses gets through: what a shortcut accepts the schema
 * accepts, and what it returns deep-equals the schema's output, keys in the same order.
 * `common_shapes_test.ts` holds each against its schema over many valid and invalid messages.
 */

/** A plain object as `JSON.parse` makes them (not an array, a class instance or a null-prototype object). */
function isPlain(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null &&
    Object.getPrototypeOf(value) === Object.prototype;
}

/** Every own key of `value` is one of `keys`, and none holds `undefined`. */
function onlyKeys(value: Record<string, unknown>, keys: readonly string[]): boolean {
  for (const key in value) {
    if (!keys.includes(key) || value[key] === undefined) return false;
  }
  return true;
}

/** A JSON-RPC request id (or progress token) as the SDK takes it: a string or a safe integer. */
const isRequestId = (id: unknown) => typeof id === "string" || Number.isSafeInteger(id);

/** A request's `_meta` of the common shape: only a progress token (string or integer). */
function isCommonMeta(meta: unknown): meta is { progressToken: string | number } {
  return isPlain(meta) && onlyKeys(meta, META_KEYS) && isRequestId(meta.progressToken);
}
const META_KEYS = ["progressToken"] as const;

const ENVELOPE_KEYS = ["jsonrpc", "id", "method", "params"] as const;

/**
 * True for a JSON-RPC request of the common shape, one that `JSONRPCRequestSchema` accepts:
 * `jsonrpc` "2.0", a string or integer `id`, a string `method`, `params` absent or an object
 * whose `_meta`, if any, holds only a progress token; no other key. False means "ask the schema",
 * not "not a request".
 */
export function isCommonRequest(value: unknown): boolean {
  if (!isPlain(value) || !onlyKeys(value, ENVELOPE_KEYS)) return false;
  if (value.jsonrpc !== "2.0" || typeof value.method !== "string" || !isRequestId(value.id)) {
    return false;
  }
  const params = value.params;
  return params === undefined ||
    (isPlain(params) && (!("_meta" in params) || isCommonMeta(params._meta)));
}

/** A `tools/call` request as the handler gets it from `CallToolRequestSchema`'s parse. */
export interface CommonCallToolRequest {
  method: "tools/call";
  params: {
    _meta?: { progressToken: string | number };
    name: string;
    arguments?: Record<string, unknown>;
  };
}

const CALL_PARAMS_KEYS = ["_meta", "name", "arguments"] as const;

/**
 * `CallToolRequestSchema`'s output for a `tools/call` of the common shape (an envelope
 * {@link isCommonRequest} takes, `params` with a string `name`, an optional `arguments` object and
 * an optional `_meta` with a progress token, no other key); `undefined` for anything else. The
 * schema strips `jsonrpc` and `id` and copies `_meta` and `arguments` (a record of unknown values:
 * the values themselves are not copied): so does this, keys in the schema's order.
 */
export function commonCallToolRequest(value: unknown): CommonCallToolRequest | undefined {
  if (!isCommonRequest(value)) return undefined;
  const { method, params } = value as { method: string; params?: unknown };
  if (method !== "tools/call" || !isPlain(params) || !onlyKeys(params, CALL_PARAMS_KEYS)) {
    return undefined;
  }
  const { _meta: meta, name, arguments: args } = params;
  if (typeof name !== "string") return undefined;
  const out: CommonCallToolRequest["params"] = meta === undefined ? { name } : {
    _meta: { progressToken: (meta as { progressToken: string | number }).progressToken },
    name,
  };
  if (args === undefined) return { method, params: out };
  const copy = plainRecord(args);
  if (!copy) return undefined;
  out.arguments = copy;
  return { method, params: out };
}

/**
 * A copy of a record of unknown values as `z.record(z.string(), z.unknown())` makes it, or
 * `undefined` for what it does not know: not a plain object, or an own `__proto__` key (the
 * schema's copy would set a prototype there, not a key).
 */
function plainRecord(value: unknown): Record<string, unknown> | undefined {
  if (!isPlain(value) || Object.hasOwn(value, "__proto__")) return undefined;
  return { ...value };
}

const RESULT_KEYS = ["content", "structuredContent", "isError"] as const;
const TEXT_KEYS = ["type", "text"] as const;

/**
 * `CallToolResultSchema`'s output for a result of the common shape: `content` an array of text
 * blocks (`type` "text" and a string `text`, nothing else), an optional `structuredContent`
 * object and an optional boolean `isError`, no other key (no `_meta`); `undefined` for anything
 * else. Built as the schema builds it: new objects, keys in the schema's order.
 */
export function commonToolResult(value: unknown): CallToolResult | undefined {
  if (!isPlain(value) || !onlyKeys(value, RESULT_KEYS)) return undefined;
  const { content, structuredContent, isError } = value;
  if (!Array.isArray(content) || (isError !== undefined && typeof isError !== "boolean")) {
    return undefined;
  }
  const blocks: { type: "text"; text: string }[] = [];
  for (const block of content) {
    if (!isPlain(block) || !onlyKeys(block, TEXT_KEYS)) return undefined;
    if (block.type !== "text" || typeof block.text !== "string") return undefined;
    blocks.push({ type: "text", text: block.text });
  }
  const result: CallToolResult = { content: blocks };
  if (structuredContent !== undefined) {
    const copy = plainRecord(structuredContent);
    if (!copy) return undefined;
    result.structuredContent = copy;
  }
  if (isError !== undefined) result.isError = isError;
  return result;
}
