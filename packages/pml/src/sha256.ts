/**
 * SHA-256 hex of bytes or of a text's UTF-8 bytes, two ways that give the same hex. `pml stdio`'s
 * start hashes `.pml.json` (the trust check) with Web Crypto, which Deno has built in; loading
 * Deno's `node:crypto` for it cost ~4–7 ms of every start before the first `tools/list`
 * (docs/speed.md, "Cold start"). Synchronous callers (`pml trust`, `pml status`, the test helpers,
 * the rare exposed name too long to keep, `pml status`'s check of cached modules) get
 * `node:crypto`, required (not imported: `deno bundle` would make an import of the npm package's
 * `pml.js` static) on their first hash.
 *
 * @module
 */
import { createRequire } from "node:module";

type NodeCrypto = typeof import("node:crypto");
let nodeCrypto: NodeCrypto | undefined;

/**
 * SHA-256 hex of `data` (a text as UTF-8), synchronously: `node:crypto`, loaded on the first
 * call.
 *
 * @example
 * ```ts
 * sha256Hex("x"); // "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"
 * ```
 */
export function sha256Hex(data: string | Uint8Array): string {
  nodeCrypto ??= createRequire(import.meta.url)("node:crypto") as NodeCrypto;
  return nodeCrypto.createHash("sha256").update(data).digest("hex");
}

/** As {@link sha256Hex}, with Web Crypto (nothing to load). */
export async function sha256HexAsync(text: string): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  let hex = "";
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
