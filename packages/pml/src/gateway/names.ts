import { sha256Hex } from "../sha256.ts";

/**
 * Longest exposed name. DESIGN §3 allows 64; clients put their own prefix in front of it and the
 * model APIs behind them take 64 characters in all. The longest prefix among the clients
 * `pml init` writes for is Claude Code's `mcp__pml__` (10): 64 - 10 = 54 fits every one of them
 * (opencode `pml_`, Gemini CLI `mcp_pml_` of at most 63, Cursor's 60 for server and tool name,
 * Codex none). docs/clients.md, "Tool names", has the table.
 */
export const MAX_EXPOSED_NAME = 54;

const HASH_LENGTH = 8;
const SAFE = new RegExp(`^[A-Za-z0-9_-]{1,${MAX_EXPOSED_NAME}}$`);

/**
 * The name a tool id is exposed under in `tools/list` (DESIGN §3): `ns:action` → `ns__action`;
 * other characters become `_`; names over {@link MAX_EXPOSED_NAME} characters are cut and end
 * with a stable hash of the tool id.
 *
 * @example
 * ```ts
 * exposedName("filesystem:read_file"); // "filesystem__read_file"
 * ```
 */
export function exposedName(toolId: string): string {
  const name = toolId.replace(":", "__").replace(/[^A-Za-z0-9_-]/g, "_");
  if (SAFE.test(name)) return name;
  const hash = sha256Hex(toolId).slice(0, HASH_LENGTH);
  return `${name.slice(0, MAX_EXPOSED_NAME - HASH_LENGTH - 1)}_${hash}`;
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
