/**
 * What a raw command may read of its own (DESIGN §12, docs/security.md "The sandbox model"): the
 * package folder of a script among its arguments and the `node_modules` it sits in, never a hidden
 * secret, another user's home, the user's whole home or a top-level folder (an argument is no
 * human's grant), each judged as named and where it leads.
 *
 * @module
 */
import { basename, dirname, isAbsolute, join } from "node:path";
import { within } from "../config/control_files.ts";
import { realPathOf } from "../exists.ts";

/**
 * The files a raw command's arguments name (`node /srv/mcp/server.mjs`, `python ./tools/x.py`):
 * for each existing path, the folder of its package (the nearest folder up with a `package.json`,
 * `pyproject.toml`, `deno.json` or `go.mod`), else its own folder (a folder argument: itself), and
 * the `node_modules` folders it sits in (`node node_modules/@scope/server/dist/index.js`: npm
 * hoists the package's dependencies beside it, where Node looks for them).
 */
export function ownFiles(args: readonly string[], cwd: string): string[] {
  const out = new Set<string>();
  for (const a of args) {
    if (!(isAbsolute(a) || /^\.\.?\//.test(a))) continue;
    const p = isAbsolute(a) ? a : join(cwd, a);
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(p);
    } catch {
      continue; // not a path
    }
    const start = info.isDirectory ? p : dirname(p);
    const root = packageRoot(start) ?? start;
    out.add(root);
    for (let dir = dirname(root); dir !== dirname(dir); dir = dirname(dir)) {
      if (basename(dir) === "node_modules") out.add(dir);
    }
    // Its dependencies, where a linked node_modules really is.
    try {
      const modules = Deno.realPathSync(join(root, "node_modules"));
      if (!modules.startsWith(root + "/")) out.add(modules);
    } catch { /* none */ }
  }
  return [...out];
}

/** Whether `path`, and the real path it leads to, lie outside every one of `hidden`. */
export function outsideSecrets(path: string, hidden: readonly string[]): boolean {
  return [path, realPathOf(path) ?? path].every((p) => !hidden.some((d) => within(p, d)));
}

/**
 * Whether a raw command's own folder may be granted: two levels deep at least (`/srv/mcp`, not `/`
 * or `/srv`), not the user's home or one of its parents, and not in another user's home (`/home/*`,
 * `/root`), which the read model leaves out.
 */
export function ownFileAllowed(path: string, home: string | undefined): boolean {
  if (path.split("/").filter(Boolean).length < 2) return false;
  if (home && (home === path || home.startsWith(path + "/"))) return false;
  const inHome = home !== undefined && path.startsWith(home + "/");
  return inHome || !(path.startsWith("/home/") || path === "/root" || path.startsWith("/root/"));
}

const PROJECT_FILES = ["package.json", "pyproject.toml", "deno.json", "go.mod"];

/** The nearest folder up from `from` (at most 4 levels) that holds a project file. */
function packageRoot(from: string): string | undefined {
  let dir = from;
  for (let level = 0; level < 5 && dir !== dirname(dir); level++, dir = dirname(dir)) {
    for (const f of PROJECT_FILES) {
      try {
        Deno.statSync(join(dir, f));
        return dir;
      } catch { /* next */ }
    }
  }
  return undefined;
}
