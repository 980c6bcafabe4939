/**
 * Protected files of a repository that depend on what it holds (DESIGN §13 "Protected files"):
 * besides `.git/config` and `.git/hooks/` (`PROTECTED_FILES`), the host's git also reads the
 * config and runs the hooks of each submodule (`.git/modules/<name>/`, nested submodules under
 * their own `modules/`), and the hooks folder a config names with `core.hooksPath` (`.husky/_`,
 * `.githooks`). Found from the files as they are: a few directory reads, nothing when the
 * repository has neither.
 *
 * @module
 */
import { isAbsolute, join, relative, resolve } from "node:path";

/** Absolute paths of the submodules' configs and hooks and of the `core.hooksPath` folders. */
export function repoGuardedPaths(root: string): string[] {
  const out: string[] = [];
  submodules(join(root, ".git", "modules"), out, 0);
  for (const config of [join(root, ".git", "config"), ...out.filter((p) => p.endsWith("config"))]) {
    const dir = hooksPath(config);
    const path = dir && (isAbsolute(dir) ? dir : resolve(root, dir));
    // A hooks folder that would hold the whole project is no folder of hooks: left out.
    if (path && relative(path, root).startsWith("..")) out.push(path);
  }
  return out;
}

/** The `config` and `hooks` of every git dir (one holding `HEAD`) under `dir`. */
function submodules(dir: string, out: string[], depth: number): void {
  if (depth > 6) return;
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch {
    return;
  }
  for (const entry of entries) {
    if (!entry.isDirectory) continue;
    const path = join(dir, entry.name);
    let gitDir = false;
    try {
      gitDir = Deno.statSync(join(path, "HEAD")).isFile;
    } catch { /* a folder of a name with slashes */ }
    if (gitDir) {
      out.push(join(path, "config"), join(path, "hooks"));
      submodules(join(path, "modules"), out, depth + 1);
    } else submodules(path, out, depth + 1);
  }
}

/** `core.hooksPath` of a git config file, read loosely (a wrong guess protects one folder more). */
function hooksPath(config: string): string | undefined {
  let text: string;
  try {
    text = Deno.readTextFileSync(config);
  } catch {
    return undefined;
  }
  const m = /^\s*hookspath\s*=\s*"?([^"\n]*?)"?\s*$/im.exec(text);
  return m?.[1] || undefined;
}
