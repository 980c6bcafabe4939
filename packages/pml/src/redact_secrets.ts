/**
 * `text` with every secret of `secrets` (API and BYOK keys) replaced by `[redacted]`, as it is and
 * as it reads percent-encoded in a URL (`encodeURIComponent`: a key with `+`, `/` or `=` placed in
 * a query). Used on what a remote MCP server sends back before an agent or a log sees it
 * (pml-server's http proxy, `pml`'s own remote target): a careless server quotes the key it got.
 *
 * @example
 * ```ts
 * redactSecrets("https://a.example/?t=k%2B1", ["k+1"]); // "https://a.example/?t=[redacted]"
 * ```
 */
export function redactSecrets(text: string, secrets: Iterable<string>): string {
  let out = text;
  for (const secret of secrets) {
    if (secret === "") continue;
    out = out.replaceAll(secret, "[redacted]");
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret) out = out.replaceAll(encoded, "[redacted]");
  }
  return out;
}
