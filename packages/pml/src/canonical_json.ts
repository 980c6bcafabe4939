/**
 * Canonical JSON: object keys sorted at every level, no whitespace, so that equal values compare
 * equal as strings and hash to the same bytes (tool pins, journalled arguments, approvals).
 *
 * @module
 */

/**
 * `value` as canonical JSON (`undefined` as `null`). Nesting is as deep as `JSON.stringify`
 * takes, which sorts each object on its way (the replacer), so arguments an agent nests thousands
 * of levels deep give an answer, not a stack overflow of a recursive copy.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value ?? null, sortedKeys);
}

function sortedKeys(_key: string, value: unknown): unknown {
  if (!value || typeof value !== "object" || Array.isArray(value)) return value;
  const object = value as Record<string, unknown>;
  return Object.fromEntries(Object.keys(object).sort().map((k) => [k, object[k]]));
}
