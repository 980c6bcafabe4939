/**
 * The URIs of resources aggregated by PML (docs/surface.md, "Resource URIs"): the owning server's
 * namespace is put first in the authority, after the scheme, which is kept (a `ui://` resource of
 * an MCP App stays `ui://`):
 *
 * | the server's URI             | through PML, from `everything`            |
 * | ---------------------------- | ----------------------------------------- |
 * | `demo://resource/static/1`   | `demo://everything/resource/static/1`     |
 * | `file:///home/a/notes.md`    | `file://everything//home/a/notes.md`      |
 * | `urn:isbn:0451`              | `urn://everything/:isbn:0451`             |
 *
 * A URI reads back to exactly one server and that server's own URI; whatever a server writes in
 * its URIs stays inside its own namespace (a server cannot name another's resource).
 *
 * @module
 */

/** A URI's scheme, lower case (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`). */
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):/;

/**
 * The PML URI of `server`'s resource `uri` (also of a URI template: the same text operation).
 * A string without a scheme is returned unchanged (it cannot be read through PML).
 *
 * @example
 * ```ts
 * toPmlUri("everything", "demo://resource/static/1"); // "demo://everything/resource/static/1"
 * ```
 */
export function toPmlUri(server: string, uri: string): string {
  const m = SCHEME.exec(uri);
  if (!m) return uri;
  const rest = uri.slice(m[0].length);
  return rest.startsWith("//")
    ? `${m[0]}//${server}/${rest.slice(2)}`
    : `${m[0]}//${server}/:${rest}`;
}

/**
 * The owner and the server's own URI of a PML URI; `undefined` for a URI that is not one.
 *
 * @example
 * ```ts
 * fromPmlUri("demo://everything/resource/static/1");
 * // { server: "everything", uri: "demo://resource/static/1" }
 * ```
 */
export function fromPmlUri(uri: string): { server: string; uri: string } | undefined {
  const m = SCHEME.exec(uri);
  if (!m || !uri.startsWith("//", m[0].length)) return undefined;
  const after = uri.slice(m[0].length + 2);
  const slash = after.indexOf("/");
  if (slash <= 0) return undefined;
  const server = after.slice(0, slash);
  const rest = after.slice(slash + 1);
  return {
    server,
    uri: rest.startsWith(":") ? `${m[0]}${rest.slice(1)}` : `${m[0]}//${rest}`,
  };
}

type Block = { readonly type?: unknown; readonly uri?: unknown; readonly resource?: unknown };

/**
 * A content block with its resource URIs made PML's (`resource_link`, an embedded `resource`);
 * any other block, the same object.
 */
export function blockWithPmlUris<T>(server: string, block: T): T {
  const b = block as Block;
  if (b?.type === "resource_link" && typeof b.uri === "string") {
    return { ...block, uri: toPmlUri(server, b.uri) };
  }
  const res = b?.resource as { uri?: unknown } | undefined;
  if (b?.type === "resource" && typeof res?.uri === "string") {
    return { ...block, resource: { ...res, uri: toPmlUri(server, res.uri) } };
  }
  return block;
}

/** True when `content` holds a block whose URI {@link blockWithPmlUris} changes. */
export function namesResources(content: readonly unknown[] | undefined): boolean {
  return content?.some((b) => {
    const type = (b as Block)?.type;
    return type === "resource_link" || type === "resource";
  }) ?? false;
}

/**
 * A tool's `_meta` with the UI resource of an MCP App made PML's (`ui.resourceUri`, and the
 * older flat key `ui/resourceUri`).
 */
export function metaWithPmlUris(
  server: string,
  meta: Record<string, unknown> | undefined,
): Record<string, unknown> | undefined {
  if (!meta) return meta;
  let out = meta;
  const ui = meta.ui as { resourceUri?: unknown } | undefined;
  if (typeof ui?.resourceUri === "string") {
    out = { ...out, ui: { ...ui, resourceUri: toPmlUri(server, ui.resourceUri) } };
  }
  const flat = meta["ui/resourceUri"];
  if (typeof flat === "string") out = { ...out, "ui/resourceUri": toPmlUri(server, flat) };
  return out;
}
