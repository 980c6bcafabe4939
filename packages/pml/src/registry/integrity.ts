/**
 * Integrity of registry bytes: SHA-256 computed by `pml` from the bytes it received (DESIGN §7),
 * written as Subresource Integrity (`sha256-<base64>`) in the lockfile and as hex in ETags and
 * FQDN hashes.
 *
 * @module
 */
import { Buffer } from "node:buffer";

/** The SHA-256 of some bytes, in the two forms the registry protocol uses. */
export interface Digest {
  /** Lowercase hex (the ETag value; its first 4 characters are the FQDN hash). */
  readonly hex: string;
  /** `sha256-<base64>` (the lockfile `integrity`). */
  readonly integrity: string;
}

/**
 * Hashes `bytes`.
 *
 * @example
 * ```ts
 * (await digest(new TextEncoder().encode("x"))).hex.slice(0, 4); // "2d71"
 * ```
 */
export async function digest(bytes: Uint8Array): Promise<Digest> {
  const raw = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
  const buf = Buffer.from(raw);
  return { hex: buf.toString("hex"), integrity: `sha256-${buf.toString("base64")}` };
}

/** The hex digest inside an `sha256-<base64>` integrity string, or `undefined` if malformed. */
export function integrityToHex(integrity: string): string | undefined {
  const m = /^sha256-([A-Za-z0-9+/]{43}=)$/.exec(integrity);
  return m ? Buffer.from(m[1], "base64").toString("hex") : undefined;
}
