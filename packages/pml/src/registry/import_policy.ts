/**
 * The import policy of registry modules (DESIGN §1, §11.3): a static `import "file:///…"` or a
 * JSON import is resolved by Deno's module graph, not checked against the sandbox's read
 * permission, so the specifiers of a module are read with the parser before it is loaded. Only
 * the registry's own origin (`<registry>/mcp/<fqdn>`) and pinned `npm:name@x.y.z` pass. A dynamic
 * `import()` whose argument is not a literal is refused too. (`eval`/`new Function`, the other way
 * to reach `import()`, are disabled in the sandbox.)
 *
 * @module
 */
import type { ImportRef } from "./module_scan.ts";

/** A refused specifier, with the reason. */
export interface ImportViolation {
  readonly specifier: string;
  readonly kind: ImportRef["kind"];
  readonly line: number;
  readonly reason: string;
}

const NPM_PINNED =
  /^npm:(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*@\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\/[A-Za-z0-9_.@-]+)*$/;
const FQDN_PATH =
  /^\/mcp\/[A-Za-z0-9][A-Za-z0-9_-]{0,63}(\.[A-Za-z0-9][A-Za-z0-9_-]{0,63}){3}(\.[0-9a-f]{4})?$/;

/** True for `npm:name@x.y.z[/sub/path]` (exact version, no range, no `..`). */
export function isPinnedNpm(specifier: string): boolean {
  return NPM_PINNED.test(specifier) && !specifier.split("/").includes("..");
}

/**
 * The registry and FQDN a specifier names, when it is `<registry>/mcp/<fqdn>` for one of the
 * configured registry base URLs.
 */
export function registryImport(
  specifier: string,
  registries: readonly string[],
): { registry: string; fqdn: string } | undefined {
  if (!URL.canParse(specifier)) return undefined;
  const url = new URL(specifier);
  if (url.search || url.hash || url.username || url.password) return undefined;
  for (const registry of registries) {
    const base = new URL(registry);
    if (url.origin !== base.origin) continue;
    const prefix = base.pathname.replace(/\/+$/, "");
    if (!url.pathname.startsWith(prefix + "/mcp/")) continue;
    const rest = url.pathname.slice(prefix.length);
    if (FQDN_PATH.test(rest)) return { registry, fqdn: rest.slice("/mcp/".length) };
  }
  return undefined;
}

/**
 * The imports of a module that the policy refuses (empty: the module may be loaded).
 *
 * @example
 * ```ts
 * checkImports([{ kind: "static", specifier: "file:///etc/passwd", line: 1 }], ["https://r.example"]);
 * // → [{ specifier: "file:///etc/passwd", reason: "only … are allowed", … }]
 * ```
 */
export function checkImports(
  imports: readonly ImportRef[],
  registries: readonly string[],
): ImportViolation[] {
  const out: ImportViolation[] = [];
  for (const ref of imports) {
    if (ref.specifier === undefined) {
      out.push({
        specifier: "(computed)",
        kind: ref.kind,
        line: ref.line,
        reason: "a dynamic import() must name a string literal",
      });
      continue;
    }
    if (isPinnedNpm(ref.specifier) || registryImport(ref.specifier, registries)) continue;
    out.push({
      specifier: ref.specifier,
      kind: ref.kind,
      line: ref.line,
      reason: ref.specifier.startsWith("npm:")
        ? "npm: imports must pin an exact version (npm:name@x.y.z)"
        : `only the registry (${
          registries.join(", ") || "none"
        }) and pinned npm: specifiers are allowed`,
    });
  }
  return out;
}
