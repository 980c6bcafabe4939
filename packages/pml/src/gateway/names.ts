import { createHash } from "node:crypto";

const SAFE = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The name a tool id is exposed under in `tools/list` (DESIGN §3): `ns:action` → `ns__action`;
 * other characters become `_`; names over 64 characters are cut and end with a stable hash.
 *
 * @example
 * ```ts
 * exposedName("filesystem:read_file"); // "filesystem__read_file"
 * ```
 */
export function exposedName(toolId: string): string {
  const name = toolId.replace(":", "__").replace(/[^A-Za-z0-9_-]/g, "_");
  if (SAFE.test(name)) return name;
  const hash = createHash("sha256").update(toolId).digest("hex").slice(0, 8);
  return `${name.slice(0, 55)}_${hash}`;
}

/** True for a well-formed tool id `ns:action`. */
export function isToolId(value: string): boolean {
  return /^[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+$/.test(value);
}

/**
 * The tool id an unshortened exposed name stands for (`json__parse` → `json:parse`), or
 * `undefined` when the name has no `__`. Shortened names (with a hash) only resolve through the
 * tool list.
 */
export function idOfExposedName(name: string): string | undefined {
  const at = name.indexOf("__");
  if (at <= 0 || at + 2 >= name.length) return undefined;
  const id = `${name.slice(0, at)}:${name.slice(at + 2)}`;
  return isToolId(id) ? id : undefined;
}
