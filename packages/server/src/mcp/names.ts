/**
 * Exposed tool names (DESIGN §3): `ns:action` is listed as `ns__action`, matching
 * `^[A-Za-z0-9_-]{1,64}$`; longer ids are cut and end with a stable hash. Same rule as the
 * `pml` package's gateway, so a tool has one exposed name whichever side lists it.
 *
 * @module
 */
import { createHash } from "node:crypto";

const SAFE = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The name a tool id is exposed under in `tools/list`.
 *
 * @example
 * ```ts
 * exposedName("json:parse"); // "json__parse"
 * ```
 */
export function exposedName(toolId: string): string {
  const name = toolId.replace(":", "__").replace(/[^A-Za-z0-9_-]/g, "_");
  if (SAFE.test(name)) return name;
  const hash = createHash("sha256").update(toolId).digest("hex").slice(0, 8);
  return `${name.slice(0, 55)}_${hash}`;
}
