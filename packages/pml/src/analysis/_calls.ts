/**
 * Resolution of `mcp` references: `mcp`, its aliases, `mcp.ns`, `mcp.ns.action`, with string
 * keys (`mcp["ns"]`, `` mcp[`ns`] ``), optional chaining and TypeScript wrappers. Anything that
 * cannot be named statically is returned as `dynamic` with a reason, never guessed.
 */
import { type Node, unwrap } from "./_node.ts";
import type { Scope } from "./_state.ts";
import { TOOL_ID_PATTERN } from "./types.ts";

/** A statically known part of the `mcp` proxy. */
export type McpRef =
  | { kind: "root" }
  | { kind: "ns"; ns: string }
  | { kind: "tool"; ns: string; action: string };

/** An `mcp` use that cannot be resolved, and the node to report it at. */
export interface Unresolved {
  kind: "dynamic";
  reason: string;
  at: Node;
}

/** `null`: not an `mcp` reference at all. */
export type Resolved = McpRef | Unresolved | null;

const ROOT: McpRef = { kind: "root" };
const GLOBAL_OBJECTS = new Set(["globalThis", "self", "window"]);

/** `mcp`, `mcp.fs`, `mcp.fs.read_file`: how a reference reads in messages. */
export function describeRef(ref: McpRef): string {
  if (ref.kind === "root") return "mcp";
  if (ref.kind === "ns") return `mcp.${ref.ns}`;
  return `mcp.${ref.ns}.${ref.action}`;
}

/** The property name of a member access or object key, when it is a static string. */
export function staticKey(prop: Node, computed: boolean | undefined): string | undefined {
  if (!computed) {
    return prop.type === "Identifier" || prop.type === "StringLiteral"
      ? (prop.name ?? prop.value as string)
      : prop.type === "NumericLiteral"
      ? String(prop.value)
      : undefined;
  }
  const p = unwrap(prop);
  if (p.type === "StringLiteral") return p.value as string;
  if (p.type === "NumericLiteral") return String(p.value);
  if (p.type === "TemplateLiteral" && p.expressions!.length === 0) {
    return p.quasis![0].value.cooked ?? undefined;
  }
  return undefined;
}

/** The reference one property below `ref`, or why there is none. */
export function memberOf(ref: McpRef, key: string, at: Node): McpRef | Unresolved {
  if (ref.kind === "root") return { kind: "ns", ns: key };
  if (ref.kind === "ns") return { kind: "tool", ns: ref.ns, action: key };
  return {
    kind: "dynamic",
    reason: `property "${key}" of tool "${ref.ns}:${ref.action}" is not a tool call`,
    at,
  };
}

/** Reason for a computed, non-literal key below `ref`. */
export function computedReason(ref: McpRef): string {
  return ref.kind === "root"
    ? `computed namespace name on "mcp"`
    : ref.kind === "ns"
    ? `computed action name on "${describeRef(ref)}"`
    : `computed property of tool "${ref.ns}:${ref.action}"`;
}

/** The tool id of a tool reference, or why it is not a valid one. */
export function toolIdOf(ref: McpRef & { kind: "tool" }, at: Node): string | Unresolved {
  const id = `${ref.ns}:${ref.action}`;
  return TOOL_ID_PATTERN.test(id)
    ? id
    : { kind: "dynamic", reason: `"${id}" is not a valid tool id (namespace:action)`, at };
}

/**
 * Resolves `node` to a part of `mcp`. `onComputed` is called with computed keys that are not
 * literals, so that the caller can still walk them.
 */
export function resolveRef(node: Node, scope: Scope, onComputed: (key: Node) => void): Resolved {
  const n = unwrap(node);
  if (n.type === "Identifier") {
    const b = scope.lookup(n.name!);
    if (b) return b.ref ?? null;
    return n.name === "mcp" ? ROOT : null;
  }
  if (n.type !== "MemberExpression" && n.type !== "OptionalMemberExpression") return null;
  const obj = unwrap(n.object!);
  const key = staticKey(n.property!, n.computed);
  // `globalThis.mcp`, and `this.mcp` (sloppy-mode `this` may be the global object).
  if (
    obj.type === "ThisExpression" ||
    (obj.type === "Identifier" && GLOBAL_OBJECTS.has(obj.name!) && !scope.lookup(obj.name!))
  ) {
    if (key === "mcp") return ROOT;
    if (key !== undefined) return null;
    if (n.computed) onComputed(n.property!);
    const name = obj.name ?? "this";
    return { kind: "dynamic", reason: `computed property of "${name}" may be "mcp"`, at: n };
  }
  const base = resolveRef(obj, scope, onComputed);
  if (base === null || base.kind === "dynamic") return base;
  if (key === undefined) {
    if (n.computed) onComputed(n.property!);
    return { kind: "dynamic", reason: computedReason(base), at: n };
  }
  return memberOf(base, key, n);
}
