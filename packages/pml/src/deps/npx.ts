/**
 * `npx [-y] <package>[@<spec>] [args]` read as what it is: an npm package PML can pin, install and
 * run under Deno itself (docs/import.md), with the grants such a server gets when its entry
 * declares none.
 *
 * @module
 */
import { isAbsolute, resolve } from "node:path";

const NPX_FLAGS_WITH_VALUE = new Set(["-p", "--package", "-c", "--call"]);

/**
 * The package `npx` runs, with the arguments before and after it; `undefined` when the command is
 * not a plain `npx <package>` (`-p`/`-c` forms run another command: kept as raw commands).
 */
export function npxPackage(
  command: string,
  args: readonly string[],
): { spec: string; before: string[]; after: string[] } | undefined {
  const base = command.split(/[\\/]/).pop();
  if (base !== "npx" && base !== "npx.cmd") return undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (NPX_FLAGS_WITH_VALUE.has(a) || /^--(package|call)=/.test(a)) return undefined;
    if (a.startsWith("-")) continue;
    return { spec: a, before: args.slice(0, i), after: args.slice(i + 1) };
  }
  return undefined;
}

/** Arguments naming an existing file or folder, absolute (`.` and `./data` against `cwd`). */
export function pathArgs(args: readonly string[], cwd: string): string[] {
  const out: string[] = [];
  for (const a of args) {
    if (!(isAbsolute(a) || a === "." || a === ".." || /^\.\.?\//.test(a))) continue;
    const p = isAbsolute(a) ? a : resolve(cwd, a);
    try {
      Deno.statSync(p);
      out.push(p);
    } catch {
      // not a path that exists: an ordinary argument
    }
  }
  return out;
}

/** `path` as `${workspace}/…` when inside `workspace` (the placeholder PML expands at launch). */
export function workspaceRelative(path: string, workspace: string): string {
  if (path === workspace) return "${workspace}";
  return path.startsWith(workspace + "/") ? `\${workspace}${path.slice(workspace.length)}` : path;
}

/**
 * The grants of an npm server whose entry declares none: it reads the workspace, writes its own
 * package folder (servers keep their data there, e.g. server-memory's graph), and reads and writes
 * the paths among its arguments (`server-filesystem .`).
 */
export function defaultNpmGrants(
  serverArgs: readonly string[],
  workspace: string,
): { read: string[]; write: string[] } {
  const paths = pathArgs(
    serverArgs.map((a) => a.replaceAll("${workspace}", workspace)),
    workspace,
  ).map((p) => workspaceRelative(p, workspace));
  return {
    read: [...new Set(["${workspace}", ...paths])],
    write: ["${packageDir}", ...paths],
  };
}
