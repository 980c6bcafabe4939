/**
 * SHA-256 helpers for served bytes, ETags and API keys. Synchronous (`node:crypto`): Web Crypto's
 * `digest` hands each hash to a worker thread and back, which cost the server more than the hash
 * itself on every authenticated request.
 *
 * @module
 */
import { createHash } from "node:crypto";

/** Lowercase hex SHA-256 digest of `data` (strings are UTF-8 encoded). */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash("sha256").update(data).digest("hex");
}

/** Subresource-integrity form `sha256-<base64>` of `data`. */
export function sha256Integrity(data: Uint8Array | string): string {
  return `sha256-${createHash("sha256").update(data).digest("base64")}`;
}
