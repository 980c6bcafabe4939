/**
 * BYOK ("bring your own key") values sent by the `pml` package in
 * `X-PML-BYOK: <base64 of a JSON object {"VAR": "value"}>` (DESIGN §8). They live in memory for
 * the request that carried them: nothing here stores or logs them, and {@link redact} scrubs them
 * from any text that may be logged.
 *
 * @module
 */
import { HttpError } from "../http.ts";

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
    const bytes = Uint8Array.from(atob(value.trim()), (c) => c.charCodeAt(0));
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
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

function invalid(reason: string): HttpError {
  return new HttpError(400, "invalid_byok", `Invalid X-PML-BYOK header: ${reason}`);
}

/** `text` with every key value of `keys` replaced by `[redacted]`. */
export function redact(text: string, keys: ByokKeys): string {
  let out = text;
  for (const key of keys.values()) {
    out = out.replaceAll(key, "[redacted]");
  }
  return out;
}
