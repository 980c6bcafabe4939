/**
 * A {@link ClientEntry} turned into a `private_mcps` definition of `.pml.json`:
 *
 * - `npx -y <package>[@<spec>] …` → an npm server pinned to the exact version and `sha512` npm
 *   resolves for the spec (installed by PML itself and run under Deno in the OS sandbox, network
 *   only while installing); paths among its arguments are granted read and write, its package
 *   folder write (servers keep their data there);
 * - any other command (`uvx`, `node path`, `python -m`, a binary) → a raw command, run in the OS
 *   sandbox with its own files readable;
 * - a `url` → a remote server (`type: "http"`) that `pml` proxies itself, Streamable HTTP or SSE,
 *   with headers taken from environment variables at call time (`{NAME}` in the header's value),
 *   and so are credentials the URL held (`url_secrets.ts`).
 *
 * Values of environment variables and headers are never written: only their names
 * (`envRequired`). What the client gave the server by value is returned apart (`values`), for
 * `--move` to carry into the client's own `pml` entry.
 *
 * @module
 */
import type { PinnedPackage } from "../deps/metadata.ts";
import { type NpmResolver, splitPackageSpec } from "../deps/npm_resolver.ts";
import { defaultNpmGrants, npxPackage, pathArgs, workspaceRelative } from "../deps/npx.ts";
import type { ClientEntry } from "./client_entry.ts";
import { envName } from "./server_json.ts";
import { urlSecrets } from "./url_secrets.ts";

/** What `pml import` shows and writes for one server. */
export interface ImportedServer {
  /** The namespace in `.pml.json` (the client's name, made a valid tool namespace). */
  readonly name: string;
  readonly entry: ClientEntry;
  readonly kind: "npm" | "command" | "remote";
  /** The `private_mcps` definition (no secret values in it). */
  readonly mcp: Record<string, unknown>;
  /** Names of the variables the server is given (required first). */
  readonly envNames: readonly string[];
  /** Values the client's file gave by value (variables and literal headers), for `--move`. */
  readonly values: Readonly<Record<string, string>>;
  /** Things the user must know or finish (an unresolved argument, a variable to set). */
  readonly notes: readonly string[];
  readonly package?: PinnedPackage;
}

/**
 * A variable reference in a client's syntax: `${X}` (Claude Code, Gemini), `${env:X}` (Cursor, VS
 * Code), `${input:x}` (VS Code's prompted inputs), `{env:X}` (opencode), `$X` (Gemini).
 */
const REF =
  /\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)\}|\$\{input:([^}]+)\}|\{env:([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g;

function refName(m: readonly (string | undefined)[]): string {
  return m[1] ?? (m[2] !== undefined ? envName(m[2]) : m[3] ?? m[4]!);
}

/** The names `value` refers to (`Bearer ${GH_TOKEN}` → GH_TOKEN). */
export function refs(value: string): string[] {
  return [...value.matchAll(REF)].map(refName);
}

/** The editors' `${workspaceFolder}` is PML's `${workspace}` (expanded when the server starts). */
function workspaceArg(arg: string): string {
  return arg.replaceAll("${workspaceFolder}", "${workspace}");
}

/** A tool namespace from a client's server name (`My Server` → `my-server`). */
export function namespaceOf(name: string, taken: ReadonlySet<string>): string {
  let ns = name.trim().replace(/[^A-Za-z0-9_.-]+/g, "-").replace(/^-+|-+$/g, "") || "server";
  if (taken.has(ns)) ns = `${ns}-mcp`;
  let n = 2;
  const base = ns;
  while (taken.has(ns)) ns = `${base}-${n++}`;
  return ns;
}

/**
 * Converts one entry. `resolver` pins `npx` packages; `workspace` resolves relative paths.
 *
 * @example
 * ```ts
 * const s = await toPrivateMcp(entry, "memory", { resolver, workspace: "/p" });
 * s.mcp; // { type: "stdio", install: { command: "npx", args: ["-y", "…@2026.8.31"] }, package: {…} }
 * ```
 */
export async function toPrivateMcp(
  entry: ClientEntry,
  name: string,
  ctx: { resolver: NpmResolver; workspace: string },
): Promise<ImportedServer> {
  const notes: string[] = [];
  const values: Record<string, string> = {};
  const optional = new Set(entry.optionalEnv ?? []);
  const required: string[] = [];
  const passed: string[] = [];
  for (const [k, v] of Object.entries(entry.env)) {
    (optional.has(k) ? passed : required).push(k);
    // A reference to the same name passes through; anything else is the client's value.
    if (!(refs(v).length === 1 && refs(v)[0] === k && /^\$\{?(env:)?\w+\}?$/.test(v))) {
      values[k] = v;
    }
  }
  const description = entry.description ??
    `Imported from ${entry.client} (${entry.file.split(/[\\/]/).pop()}: "${entry.name}")`;

  if (entry.url) {
    const headers: Record<string, string> = {};
    for (const [h, v] of Object.entries(entry.headers)) {
      const names = refs(v);
      if (names.length) {
        headers[h] = v.replace(REF, (...m) => `{${refName(m)}}`);
        required.push(...names);
      } else {
        // A value written in the client's file (often a token): PML reads it from a variable.
        const variable = envName(`${name}_${h}`);
        headers[h] = `{${variable}}`;
        values[variable] = v;
        required.push(variable);
      }
    }
    for (const [h, variable] of Object.entries(entry.headerEnv)) {
      headers[h] = h.toLowerCase() === "authorization" && !/^Bearer /i.test(variable)
        ? `Bearer {${variable}}`
        : `{${variable}}`;
      required.push(variable);
    }
    // Credentials inside the URL (userinfo, a key in the query) become variables too.
    const inUrl = urlSecrets(entry.url, name, (v) => {
      const names = refs(v);
      return names.length === 1 && v.replace(REF, "") === "" ? names[0] : undefined;
    });
    Object.assign(values, inUrl.values);
    required.push(...inUrl.names);
    const envRequired = [...new Set(required)];
    if (
      !inUrl.names.length &&
      !Object.keys(headers).some((h) => h.toLowerCase() === "authorization")
    ) {
      notes.push(signInNote(name));
    }
    return {
      name,
      entry,
      kind: "remote",
      mcp: {
        type: "http",
        description,
        proxyTo: inUrl.url,
        transport: entry.transport ?? "streamable-http",
        ...(Object.keys(headers).length ? { headers } : {}),
        envRequired,
      },
      envNames: envRequired,
      values,
      notes,
    };
  }

  const command = entry.command!;
  const args = entry.args.map(workspaceArg);
  const npx = npxPackage(command, args);
  const paths = pathArgs(
    (npx ? npx.after : args).map((a) => a.replaceAll("${workspace}", ctx.workspace)),
    ctx.workspace,
  ).map((p) => workspaceRelative(p, ctx.workspace));
  const env = { envRequired: [...new Set(required)] };
  if (npx) {
    const { name: pkgName, version } = splitPackageSpec(npx.spec);
    const pkg = await ctx.resolver.resolve(pkgName, version);
    return {
      name,
      entry,
      kind: "npm",
      mcp: {
        type: "stdio",
        description,
        install: {
          command: "npx",
          args: [...npx.before, `${pkg.name}@${pkg.version}`, ...npx.after],
          ...env,
        },
        package: pkg,
        permissions: {
          ...defaultNpmGrants(npx.after, ctx.workspace),
          ...(passed.length ? { env: passed } : {}),
        },
      },
      envNames: [...env.envRequired, ...passed],
      values,
      notes,
      package: pkg,
    };
  }
  return {
    name,
    entry,
    kind: "command",
    mcp: {
      type: "stdio",
      description,
      install: { command, args, ...env },
      ...(paths.length || passed.length
        ? {
          permissions: {
            ...(paths.length ? { read: paths } : {}),
            ...(passed.length ? { env: passed } : {}),
          },
        }
        : {}),
    },
    envNames: [...env.envRequired, ...passed],
    values,
    notes,
  };
}

/**
 * What `pml import` says of a remote server with no `Authorization` of its own: it signs in with
 * OAuth, and its user does, on first use.
 */
export function signInNote(name: string): string {
  return `no token in its headers: where it signs in with OAuth, it asks you to sign in on first ` +
    `use (the call waits; run \`pml auth ${name}\`, or open the link pml prints); the tokens ` +
    `stay under ~/.pml/oauth, out of the workspace and every sandbox`;
}
