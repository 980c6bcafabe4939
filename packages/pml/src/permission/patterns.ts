/** `allow | ask | deny` lists of tool patterns (DESIGN §5). */
export interface Permissions {
  readonly allow: readonly string[];
  readonly ask: readonly string[];
  readonly deny: readonly string[];
}

/** The decision for one tool. */
export type Decision = "allow" | "ask" | "deny";

/**
 * True when `pattern` (`*`, `ns`, `ns:*`, or exact `ns:action`) matches tool id `toolId`.
 *
 * @example
 * ```ts
 * matchesPattern("filesystem:*", "filesystem:read_file"); // true
 * ```
 */
export function matchesPattern(pattern: string, toolId: string): boolean {
  if (pattern === "*") return true;
  const colon = toolId.indexOf(":");
  const ns = colon < 0 ? toolId : toolId.slice(0, colon);
  if (pattern === ns || pattern === `${ns}:*`) return true;
  return pattern === toolId;
}

/**
 * Decides a tool (docs/permissions.md): any `deny` pattern wins; then an exact tool id (`ask`
 * before `allow`), so that a tool the human answered "always" for stays allowed under a wildcard
 * `ask`; then the wildcard patterns (`ask` before `allow`); a tool matched by none is `ask`.
 *
 * @example
 * ```ts
 * checkPermission("shell:exec", { allow: ["*"], ask: [], deny: ["shell"] }); // "deny"
 * checkPermission("shell:exec", { allow: ["shell:exec"], ask: ["shell:*"], deny: [] }); // "allow"
 * ```
 */
export function checkPermission(toolId: string, permissions: Permissions): Decision {
  if (permissions.deny.some((p) => matchesPattern(p, toolId))) return "deny";
  if (permissions.ask.includes(toolId)) return "ask";
  if (permissions.allow.includes(toolId)) return "allow";
  if (permissions.ask.some((p) => matchesPattern(p, toolId))) return "ask";
  if (permissions.allow.some((p) => matchesPattern(p, toolId))) return "allow";
  return "ask";
}

/** Approval mode of a capability from the tools it uses. */
export type CapabilityApprovalMode = "auto" | "ask" | "blocked";

/**
 * Approval mode of a capability (DESIGN §5): any deny → `blocked`; any ask → `ask`;
 * all allow → `auto`. A capability that uses no tool is `auto`.
 */
export function inferCapabilityApprovalMode(
  toolsUsed: readonly string[],
  permissions: Permissions,
): CapabilityApprovalMode {
  const decisions = toolsUsed.map((t) => checkPermission(t, permissions));
  if (decisions.includes("deny")) return "blocked";
  if (decisions.includes("ask")) return "ask";
  return "auto";
}

/** Names any pattern in the lists refers to (`ns` of `ns:action`, `ns:*`, `ns`), `*` excluded. */
export function namedNamespaces(permissions: Permissions, lists: (keyof Permissions)[]): string[] {
  const out = new Set<string>();
  for (const list of lists) {
    for (const p of permissions[list]) {
      if (p !== "*") out.add(p.split(":")[0]);
    }
  }
  return [...out];
}
