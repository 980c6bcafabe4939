/**
 * SHA-256 helpers (Web Crypto) for served bytes, ETags and API keys.
 *
 * @module
 */
import { encodeBase64 } from "./_base64.ts";

/** Lowercase hex SHA-256 digest of `data` (strings are UTF-8 encoded). */
export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Subresource-integrity form `sha256-<base64>` of `data`. */
export async function sha256Integrity(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
  return `sha256-${encodeBase64(digest)}`;
}
