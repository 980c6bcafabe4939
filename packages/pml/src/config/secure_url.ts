import { PmlError } from "../errors.ts";

/**
 * True for a loopback host as `URL.hostname` spells it: `localhost` (and `*.localhost`, which
 * resolvers keep on the machine), `127.0.0.0/8` and `[::1]`.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host.endsWith(".localhost")) return true;
  if (host === "[::1]") return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Refuses a plain-`http` URL whose host is not loopback (story 14.7: HTTPS is mandatory): the API
 * key, BYOK keys and fetched code would cross the network in clear. `what` names the setting in the
 * error, such as `cloudUrl` or `registries[0]`.
 *
 * @example
 * ```ts
 * requireSecureUrl("http://127.0.0.1:3000", "cloudUrl"); // fine: loopback
 * requireSecureUrl("http://pml.example.com", "cloudUrl"); // throws CONFIG_INVALID
 * ```
 */
export function requireSecureUrl(url: string, what: string): void {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new PmlError("CONFIG_INVALID", `${what} "${url}" is not a URL`);
  }
  if (parsed.protocol === "https:") return;
  if (parsed.protocol === "http:" && isLoopbackHost(parsed.hostname)) return;
  throw new PmlError(
    "CONFIG_INVALID",
    parsed.protocol === "http:"
      ? `${what} "${url}" uses plain http to a host off this machine ("${parsed.hostname}"): ` +
        `HTTPS is required (plain http is allowed only for localhost, 127.0.0.0/8 and [::1])`
      : `${what} "${url}" must be an https URL (got "${parsed.protocol}")`,
  );
}
