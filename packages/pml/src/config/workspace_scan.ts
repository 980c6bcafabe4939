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
  let read = 0;
  while (queue.length) {
    const dir = queue.shift()!;
    if (++read > budget) {
      out.truncated = true;
      break;
    }
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(dir)];
    } catch {
      continue;
    }
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
