/**
 * Credentials a client's file wrote inside a remote server's URL (`https://user:KEY@host/mcp`,
 * `?api_key=KEY`) become variables, as literal headers do: the URL written to `.pml.json`
 * (`proxyTo`) and shown on the terminal holds `{NAME}` where the value was, and the value is
 * returned apart (for `--move` to carry into the client's `pml` entry). `pml` fills `{NAME}` from
 * the environment, percent-encoded, when it connects (`targets/remote/remote_session.ts`
 * `fillUrl`). What counts: the userinfo (user and password), and a query parameter whose name
 * says key, token, secret, password, auth, signature, credential or session, or whose value
 * looks like a key (a known key prefix, or 32 or more characters of letters and digits mixed).
 *
 * @module
 */
import { envName } from "./server_json.ts";

/** A parameter name that says it carries a credential. */
const SECRET_NAME = /key|token|secret|passw(or)?d|pwd|auth|sig(nature)?|credential|session/i;

/** A value shaped like a key whatever its parameter's name. */
function looksLikeKey(value: string): boolean {
  if (/^(sk|pk|rk)[-_]|^gh[opsu]_|^github_pat_|^xox[abpr]-|^glpat-|^AKIA|^AIza/.test(value)) {
    return true;
  }
  return value.length >= 32 && /^[A-Za-z0-9_\-.~+/=%]+$/.test(value) && /[0-9]/.test(value) &&
    /[A-Za-z]/.test(value);
}

/** What a URL becomes: the template, the variables it names, and their values. */
export interface UrlSecrets {
  readonly url: string;
  /** Variables the template names (`{NAME}`), in order. */
  readonly names: string[];
  /** name → value (decoded), for the ones the file wrote by value. */
  readonly values: Record<string, string>;
}

/**
 * `url` with its credentials replaced by `{NAME}`. `server`: the namespace, the variables'
 * prefix (`docs` → `DOCS_URL_PASSWORD`, `DOCS_API_KEY`). `refOf`: the variable a value refers
 * to (`${X}` in the client's syntax), kept as that variable.
 *
 * @example
 * ```ts
 * urlSecrets("https://u:k1@h.test/mcp?api_key=k2", "docs", () => undefined).url;
 * // "https://{DOCS_URL_USER}:{DOCS_URL_PASSWORD}@h.test/mcp?api_key={DOCS_API_KEY}"
 * ```
 */
export function urlSecrets(
  url: string,
  server: string,
  refOf: (value: string) => string | undefined,
): UrlSecrets {
  const names: string[] = [];
  const values: Record<string, string> = {};
  const variable = (raw: string, name: string): string => {
    const decoded = safeDecode(raw);
    const ref = refOf(decoded);
    const v = ref ?? envName(`${server}_${name}`);
    if (!ref) values[v] = decoded;
    if (!names.includes(v)) names.push(v);
    return `{${v}}`;
  };
  const m = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)(.*)$/s.exec(url);
  if (!m) return { url, names, values };
  let [, scheme, authority, rest] = m;
  const at = authority.lastIndexOf("@");
  if (at >= 0) {
    const userinfo = authority.slice(0, at);
    const colon = userinfo.indexOf(":");
    const user = colon < 0 ? userinfo : userinfo.slice(0, colon);
    const password = colon < 0 ? undefined : userinfo.slice(colon + 1);
    const parts = [
      user ? variable(user, "URL_USER") : "",
      ...(password !== undefined ? [password ? variable(password, "URL_PASSWORD") : ""] : []),
    ];
    authority = `${parts.join(":")}@${authority.slice(at + 1)}`;
  }
  const q = rest.indexOf("?");
  if (q >= 0) {
    const hash = rest.indexOf("#", q);
    const query = rest.slice(q + 1, hash < 0 ? undefined : hash);
    const params = query.split("&").map((pair) => {
      const eq = pair.indexOf("=");
      if (eq < 0) return pair;
      const key = pair.slice(0, eq), value = pair.slice(eq + 1);
      if (!value || /^\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(value)) return pair;
      const secret = SECRET_NAME.test(safeDecode(key)) || looksLikeKey(safeDecode(value));
      return secret ? `${key}=${variable(value, safeDecode(key))}` : pair;
    });
    rest = `${rest.slice(0, q)}?${params.join("&")}${hash < 0 ? "" : rest.slice(hash)}`;
  }
  return { url: `${scheme}${authority}${rest}`, names, values };
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
