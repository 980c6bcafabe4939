/**
 * FQDN grammar of the registry: `org.project.namespace.action[.hash]` (DESIGN §3).
 *
 * Every part is 1–64 ASCII characters `[A-Za-z0-9_-]` starting with a letter or digit, so a
 * decoded FQDN can never hold `/`, `..`, `%` or non-ASCII characters.
 *
 * @module
 */

/** One FQDN part: what org, project, namespace, action and hash must look like. */
export const FQDN_PART = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** Longest accepted FQDN (5 parts of 64 characters and 4 dots). */
export const MAX_FQDN_LENGTH = 5 * 64 + 4;

/** A parsed FQDN: the 4-part `name` and, for 5-part FQDNs, the `hash` part. */
export interface ParsedFqdn {
  /** `org.project.namespace.action`. */
  readonly name: string;
  readonly org: string;
  readonly project: string;
  readonly namespace: string;
  readonly action: string;
  /** The 5th part as written by the caller (not checked against anything yet). */
  readonly hash?: string;
}

/**
 * Parses a decoded 4- or 5-part FQDN.
 *
 * @throws {TypeError} with a message quoting the input when it is not a valid FQDN.
 * @example
 * ```ts
 * parseFqdn("pml.std.filesystem.read_file.b2c4").hash; // "b2c4"
 * ```
 */
export function parseFqdn(text: string): ParsedFqdn {
  if (text.length > MAX_FQDN_LENGTH) {
    throw new TypeError(
      `Invalid FQDN "${text.slice(0, 40)}…": longer than ${MAX_FQDN_LENGTH} characters`,
    );
  }
  const parts = text.split(".");
  if (parts.length !== 4 && parts.length !== 5) {
    throw new TypeError(
      `Invalid FQDN "${text}": expected org.project.namespace.action[.hash], got ${parts.length} parts`,
    );
  }
  const bad = parts.find((part) => !FQDN_PART.test(part));
  if (bad !== undefined) {
    throw new TypeError(
      `Invalid FQDN "${text}": part "${bad}" must be 1-64 characters of A-Z a-z 0-9 _ - starting with a letter or digit`,
    );
  }
  const [org, project, namespace, action, hash] = parts;
  return { name: parts.slice(0, 4).join("."), org, project, namespace, action, hash };
}

/** The 5-part FQDN of `name` whose served bytes have the SHA-256 hex digest `sha256Hex`. */
export function fqdnWithHash(name: string, sha256Hex: string): string {
  return `${name}.${sha256Hex.slice(0, 4)}`;
}
