/**
 * BYOK ("bring your own key") values sent by the `pml` package in
 * `X-PML-BYOK: <base64 of a JSON object {"VAR": "value"}>` (DESIGN §8). They live in memory for
 * the request that carried them: nothing here stores or logs them, and {@link redact} scrubs them
 * from any text that may be logged.
 *
 * @module
 */
import { HttpError } from "../http.ts";
import { redactSecrets } from "../../../pml/src/redact_secrets.ts";

/** The header carrying the keys. */
export const BYOK_HEADER = "x-pml-byok";

/** Variable name → key value, for one request. */
export type ByokKeys = ReadonlyMap<string, string>;

const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * Decodes the header value (absent → no keys).
 *
 * @throws {HttpError} 400 `invalid_byok` when it is not base64 of a JSON object of strings. The
 * message never quotes the header value.
 */
export function parseByokHeader(value: string | null): ByokKeys {
  const keys = new Map<string, string>();
  if (value === null || value.trim() === "") return keys;
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8(atob(value.trim())));
  } catch {
    throw invalid("it is not base64 of UTF-8 JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw invalid('expected a JSON object {"VAR": "value"}');
  }
  for (const [name, key] of Object.entries(parsed)) {
    if (!VAR_NAME.test(name)) throw invalid(`"${name.slice(0, 64)}" is not a variable name`);
    if (typeof key !== "string") throw invalid(`the value of "${name}" is not a string`);
    if (key !== "") keys.set(name, key);
  }
  return keys;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });
/** A byte past ASCII in `atob`'s output (each of its chars is one byte, 0 to 255). */
const NON_ASCII = /[\x80-\xff]/;

/**
 * The text whose UTF-8 bytes `binary` (as `atob` returns them) holds; throws on invalid UTF-8. An
 * ASCII string is its own decoding, the usual case, read without copying it to bytes.
 */
function utf8(binary: string): string {
  if (!NON_ASCII.test(binary)) return binary;
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return UTF8.decode(bytes);
}

function invalid(reason: string): HttpError {
  return new HttpError(400, "invalid_byok", `Invalid X-PML-BYOK header: ${reason}`);
}

/**
 * `text` with every key value of `keys` replaced by `[redacted]`, as it is and percent-encoded
 * ({@link redactSecrets}).
 */
export function redact(text: string, keys: ByokKeys): string {
  return redactSecrets(text, keys.values());
}

/** `value` with every string scrubbed of the caller's keys (nothing copied without keys). */
export function scrubbed<T>(value: T, keys: ByokKeys): T {
  if (keys.size === 0) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return redact(v, keys);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [redact(k, keys), walk(x)]));
    }
    return v;
  };
  return walk(value) as T;
}
