/**
 * Registry names on the client side (DESIGN §3): `org.project.namespace.action` (the 4-part
 * name, the lockfile key) and the 5-part FQDN with the first 4 hex of the SHA-256 of the bytes.
 *
 * @module
 */

const PART = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** A parsed 4- or 5-part FQDN. */
export interface Fqdn {
  /** `org.project.namespace.action`. */
  readonly name: string;
  readonly namespace: string;
  readonly action: string;
  readonly hash?: string;
}

/**
 * Parses a 4- or 5-part FQDN.
 *
 * @throws {TypeError} when `text` is not one.
 * @example
 * ```ts
 * parseFqdn("pml.std.filesystem.read_file.b2c4").name; // "pml.std.filesystem.read_file"
 * ```
 */
export function parseFqdn(text: string): Fqdn {
  const parts = text.split(".");
  if ((parts.length !== 4 && parts.length !== 5) || !parts.every((p) => PART.test(p))) {
    throw new TypeError(`Invalid FQDN "${text}": expected org.project.namespace.action[.hash]`);
  }
  if (parts.length === 5 && !/^[0-9a-f]{4}$/.test(parts[4])) {
    throw new TypeError(`Invalid FQDN "${text}": the hash part must be 4 lowercase hex digits`);
  }
  return {
    name: parts.slice(0, 4).join("."),
    namespace: parts[2],
    action: parts[3],
    hash: parts[4],
  };
}

/** The tool id a deno entry provides: `namespace:action` of its name. */
export function toolIdOf(name: string): string {
  const f = parseFqdn(name);
  return `${f.namespace}:${f.action}`;
}
