/**
 * One walk of a folder a tool may write (the workspace, a write grant) for the files of the
 * host-run and instruction classes whose place is not fixed (DESIGN §13 "Protected files",
 * docs/security.md "Host-run and instruction files"): every git dir (a `.git` folder, or any folder
 * shaped as one: a bare repository, a submodule's `.git/modules/<name>`, a linked worktree's
 * `.git/worktrees/<name>`), every gitfile (a `.git` file naming a git dir), the instruction files
 * of nested folders (`packages/x/CLAUDE.md`), VS Code's `*.code-workspace` files and the
 * `package.json` files.
 *
 * Git's own folders are entered only where they hold other git dirs (`modules`, `worktrees`), not
 * their objects; the folders of dependencies, caches and build outputs ({@link NOT_WALKED}:
 * `node_modules`, `target`, `.venv`, …) not at all (nine tenths of a JavaScript project's entries:
 * a walk of this repository's checkout took ~80 ms of CPU with `node_modules`, ~5 ms without;
 * VS Code's own scan for repositories leaves `node_modules` out too). A repository there is still
 * found when an index's gitlink names it (`repo_guards.ts`). The walk stops at {@link SCAN_BUDGET} folders: past it,
 * what lies deeper is not found. docs/security.md says what that leaves.
 *
 * @module
 */
import { basename, join } from "node:path";

/** Folders one walk reads at most. */
export const SCAN_BUDGET = 20_000;

/** Folders of dependencies, caches and build outputs, by name: not walked. */
export const NOT_WALKED: ReadonlySet<string> = new Set([
  "node_modules",
  "target",
  ".venv",
  "venv",
  "__pycache__",
  ".next",
  ".nuxt",
  ".turbo",
  ".gradle",
  ".tox",
  ".mypy_cache",
  ".pytest_cache",
  ".cache",
]);

/** Files of a folder the agents of the next session read as instructions, by name. */
export const INSTRUCTION_NAMES: readonly string[] = [
  "CLAUDE.md",
  "CLAUDE.local.md",
  "AGENTS.md",
  "GEMINI.md",
  ".cursorrules",
  ".windsurfrules",
  ".clinerules",
];

/** What one walk found (absolute paths). */
export interface WorkspaceScan {
  readonly gitDirs: readonly string[];
  readonly gitFiles: readonly string[];
  readonly instructions: readonly string[];
  readonly codeWorkspaces: readonly string[];
  readonly packageJsons: readonly string[];
  /** True when the walk stopped at {@link SCAN_BUDGET}. */
  readonly truncated: boolean;
}

/**
 * True for a folder taken for a git dir: a `HEAD` beside `objects`, `refs`, a `commondir` or a
 * `config` (looser than git, which wants `objects` and `refs` or a `commondir`: a wrong guess
 * guards a few files more).
 */
export function isGitDirShape(names: ReadonlySet<string>): boolean {
  return names.has("HEAD") &&
    ["objects", "refs", "commondir", "config"].some((name) => names.has(name));
}

/**
 * How long after its last change a folder's listing is reused while its times stay (ms): a change
 * within the same tick of the file system's clock keeps them, so only a listing read well after the
 * folder last changed is trusted to be whole.
 */
const SETTLED_MS = 2000;
/**
 * Listings of folders, by path, with the folder's modification and change times when it was read:
 * adding, removing or renaming an entry moves both. The change time is what no program can set
 * back (a command that adds an entry and then restores the modification time with `touch -d` moves
 * it to now), so a listing is reused only while both are the same.
 */
const listings = new Map<string, { readonly stamp: string; readonly entries: Deno.DirEntry[] }>();
/** Folders whose listings are kept at most (all are dropped past it). */
const MAX_LISTINGS = 200_000;

/**
 * The entries of `dir`: its listing of an earlier walk while its times are the same (a `stat`
 * instead of reading the folder), otherwise read. `undefined` for what is no folder (any more).
 */
function entriesOf(dir: string, now: number): Deno.DirEntry[] | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(dir);
  } catch {
    return undefined;
  }
  if (!info.isDirectory) return undefined;
  const mtime = info.mtime?.getTime();
  const ctime = info.ctime?.getTime();
  const stamp = `${mtime}:${ctime}`;
  const known = listings.get(dir);
  if (known && known.stamp === stamp) return known.entries;
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch {
    listings.delete(dir);
    return undefined;
  }
  const settled = mtime !== undefined && ctime !== undefined && now - mtime >= SETTLED_MS &&
    now - ctime >= SETTLED_MS;
  if (settled) {
    if (listings.size >= MAX_LISTINGS) listings.clear();
    listings.set(dir, { stamp, entries });
  } else listings.delete(dir);
  return entries;
}

/** Walks `root` (see the module's doc). */
export function scanWorkspace(root: string, budget = SCAN_BUDGET): WorkspaceScan {
  const out = {
    gitDirs: [] as string[],
    gitFiles: [] as string[],
    instructions: [] as string[],
    codeWorkspaces: [] as string[],
    packageJsons: [] as string[],
    truncated: false,
  };
  const queue: string[] = [root];
  const now = Date.now();
  for (let next = 0; next < queue.length; next++) {
    const dir = queue[next];
    if (next >= budget) {
      out.truncated = true;
      break;
    }
    const entries = entriesOf(dir, now);
    if (!entries) continue;
    const names = new Set(entries.map((e) => e.name));
    // A `.git` folder is taken for one whatever it holds yet.
    const gitDir = isGitDirShape(names) || basename(dir) === ".git";
    if (gitDir) out.gitDirs.push(dir);
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isSymlink) continue;
      if (entry.isFile) {
        if (entry.name === ".git") out.gitFiles.push(path);
        else if (gitDir) continue;
        else if (INSTRUCTION_NAMES.includes(entry.name)) out.instructions.push(path);
        else if (entry.name.endsWith(".code-workspace")) out.codeWorkspaces.push(path);
        else if (entry.name === "package.json") out.packageJsons.push(path);
        continue;
      }
      if (!entry.isDirectory) continue;
      // Inside a git dir, only the folders that hold other git dirs.
      if (gitDir && entry.name !== "modules" && entry.name !== "worktrees") continue;
      if (NOT_WALKED.has(entry.name)) continue;
      if (INSTRUCTION_NAMES.includes(entry.name) && !gitDir) out.instructions.push(path);
      queue.push(path);
    }
  }
  return out;
}
