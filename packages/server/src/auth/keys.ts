/**
 * API keys: `pml_` + 32 random bytes (base64url), shown once, stored as SHA-256 only.
 * Registry reads are public; publishing (and the MCP endpoint) need `Authorization: Bearer <key>`.
 *
 * @module
 */
import { HttpError } from "../http.ts";
import { encodeBase64Url } from "../registry/_base64.ts";
import { sha256Hex } from "../registry/hash.ts";
import type { ApiKeyRecord, Store } from "../store/store.ts";
import type { KeyLookup } from "./recent_keys.ts";

const KEY_FORMAT = /^pml_[A-Za-z0-9_-]{43}$/;
const PREFIX_LENGTH = 12;

/** A key just created: `key` is the secret, to show once; `record` is what was stored. */
export interface CreatedApiKey {
  readonly key: string;
  readonly record: ApiKeyRecord;
}

/**
 * Creates and stores a new API key.
 *
 * @example
 * ```ts
 * const { key, record } = await createApiKey(store, { label: "ci" });
 * console.log(key); // pml_…, never retrievable again
 * ```
 */
export async function createApiKey(
  store: Store,
  options: { label?: string; now?: () => Date } = {},
): Promise<CreatedApiKey> {
  const key = `pml_${encodeBase64Url(crypto.getRandomValues(new Uint8Array(32)))}`;
  const id = `key_${
    Array.from(crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0"))
      .join("")
  }`;
  const record: ApiKeyRecord = {
    id,
    prefix: key.slice(0, PREFIX_LENGTH),
    keyHash: sha256Hex(key),
    label: options.label ?? null,
    createdAt: (options.now?.() ?? new Date()).toISOString(),
    revokedAt: null,
  };
  await store.createApiKey(record);
  return { key, record };
}

/**
 * The stored key named by the request's `Authorization: Bearer` header.
 *
 * @throws {HttpError} 401 `unauthorized` (no or malformed header), 401 `invalid_api_key`
 * (unknown key), 403 `revoked_api_key`.
 */
export async function authenticate(request: Request, store: KeyLookup): Promise<ApiKeyRecord> {
  const challenge = { "www-authenticate": 'Bearer realm="pml-server"' };
  const header = request.headers.get("authorization");
  const match = header?.match(/^Bearer[ ]+(\S+)[ ]*$/i);
  if (!match) {
    throw new HttpError(
      401,
      "unauthorized",
      'Missing API key: send the header "Authorization: Bearer <key>" (create one with `pml-server keys create`)',
      {},
      challenge,
    );
  }
  const token = match[1];
  const record = KEY_FORMAT.test(token)
    ? await store.findApiKeyByHash(sha256Hex(token))
    : undefined;
  if (!record) {
    throw new HttpError(
      401,
      "invalid_api_key",
      `Invalid API key "${token.slice(0, PREFIX_LENGTH)}…"`,
      {},
      challenge,
    );
  }
  if (record.revokedAt !== null) {
    throw new HttpError(
      403,
      "revoked_api_key",
      `API key "${record.id}" was revoked at ${record.revokedAt}`,
    );
  }
  return record;
}
