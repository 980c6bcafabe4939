import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import { GIT_DIR_CONTROL, repoGuardedPaths } from "./repo_guards.ts";
import {
  INSTRUCTION_NAMES,
  isGitDirShape,
  scanWorkspace,
  type WorkspaceScan,
} from "./workspace_scan.ts";

/**
 * PML's control files, relative to the workspace (DESIGN §12): its config, its state folder
 * (lockfile, audit log, deps, pending approvals) and the client configs `pml init` writes. No tool
 * and no sandboxed code may write, move, delete or create them; only `pml` itself does, on a
 * human's decision. The OS sandbox binds them read-only; the gateway refuses them before that.
 */
export const CONTROL_FILES: readonly string[] = [
  ".pml.json",
  ".pml",
  ".mcp.json",
  ".mcp.json.backup",
  ".cursor/mcp.json",
  ".vscode/mcp.json",
  ".gemini/settings.json",
  ".codex/config.toml",
  "opencode.json",
  ".qwen/settings.json",
];

/**
 * **Host-run files** (DESIGN §13 "Protected files"; docs/security.md "Host-run and instruction
 * files"): files that make the host run something the user did not name, later, outside every
 * sandbox: a shell that starts, `git` (its configuration, hooks, and the files that say where they
 * are), an ordinary command (`npm test` under a workspace `.npmrc` `script-shell`, `cargo build`
 * under `.cargo/config.toml` `rustc-wrapper`, `yarn` under `.yarnrc.yml` `yarnPath`, `pnpm` with a
 * `.pnpmfile.cjs`), an editor or a dev container opening the folder, an agent reading its project
 * settings (hooks, commands). This list, relative to any folder a tool may write (the workspace and
 * every write grant), is the class's current extent; `repo_guards.ts` adds what each repository
 * names, the walk (`workspace_scan.ts`) nested repositories and `*.code-workspace` files, and
 * `package_scripts.ts` the lifecycle scripts of `package.json` (the file itself is ordinary work).
 * Guarded like the control files: never written, moved, deleted or created by a tool or sandboxed
 * code. `.git/` itself stays writable (objects, index, refs, logs).
 */
export const PROTECTED_FILES: readonly string[] = [
  ".bashrc",
  ".bash_profile",
  ".bash_login",
  ".zshrc",
  ".zshenv",
  ".zprofile",
  ".zlogin",
  ".profile",
  ".gitconfig",
  ".gitmodules",
  ".git/config",
  ".git/config.worktree",
  ".git/commondir",
  ".git/gitdir",
  ".git/hooks",
  ".npmrc",
  ".yarnrc",
  ".yarnrc.yml",
  ".pnpmfile.cjs",
  ".cargo/config",
  ".cargo/config.toml",
  ".devcontainer",
  ".devcontainer.json",
  ".vscode",
  ".idea",
  ".zed",
  ".claude",
  ".cursor",
  ".gemini",
  ".codex",
  ".qwen",
  "opencode.json",
  "opencode.jsonc",
];

/**
 * **Instruction files**: what the next agent session reads as instructions from the folder it
 * works in (a persistence channel for an injected instruction). Relative to any folder a tool may
 * write; {@link INSTRUCTION_NAMES} (`CLAUDE.md`, `AGENTS.md`, …) count in any folder below it too.
 * A write by a tool is the human's decision whatever `allow` says, with the content on the human's
 * page (`targets/std/instruction_files.ts`); from `shell:exec` they are read-only.
 */
export const INSTRUCTION_FILES: readonly string[] = [
  ...INSTRUCTION_NAMES,
  ".github/copilot-instructions.md",
  ".github/instructions",
  ".continue",
];

/** How long a walk of a folder is reused for the guarded paths of a call's policy (ms). */
const SCAN_REUSE_MS = 1000;
const scans = new Map<string, { at: number; scan: WorkspaceScan }>();

/**
 * The walk of `root` (`workspace_scan.ts`), reused for a second; `fresh` walks again (before and
 * after a shell command, to tell what it created).
 */
export function scanOf(root: string, fresh = false, now = Date.now()): WorkspaceScan {
  const hit = scans.get(root);
  if (!fresh && hit && now >= hit.at && now - hit.at < SCAN_REUSE_MS) return hit.scan;
  const scan = scanWorkspace(root);
  scans.set(root, { at: now, scan });
  return scan;
}

/** Absolute paths of the control files of `workspace` (whether or not they exist). */
export function controlFilePaths(workspace: string): string[] {
  return CONTROL_FILES.map((rel) => join(workspace, rel));
}

/**
 * Absolute paths of the host-run files under `root` (whether or not they exist): the list, what its
 * repositories name (`repo_guards.ts`) and its `*.code-workspace` files.
 */
export function protectedFilePaths(root: string, scan = scanOf(root)): string[] {
  return [
    ...PROTECTED_FILES.map((rel) => join(root, rel)),
    ...repoGuardedPaths(root, scan),
    ...scan.codeWorkspaces,
  ];
}

/** Absolute paths of the instruction files under `root`: the list, and those of nested folders. */
export function instructionFilePaths(root: string, scan = scanOf(root)): string[] {
  return [...INSTRUCTION_FILES.map((rel) => join(root, rel)), ...scan.instructions];
}

/**
 * Everything no tool may write unchecked under the folders it may write (`roots`: the workspace
 * and the write grants): each root's control, host-run and instruction files. A granted other
 * project keeps its own `.pml.json` and `.git/config` too. `fresh`: walk the folders again;
 * `instructions: false` leaves the instruction files out (the write tools' sandbox writes them
 * once a human approved it).
 */
export function guardedPaths(
  roots: readonly string[],
  opts: { readonly fresh?: boolean; readonly instructions?: boolean } = {},
): string[] {
  return [
    ...new Set(roots.flatMap((root) => {
      const scan = scanOf(root, opts.fresh);
      return [
        ...controlFilePaths(root),
        ...protectedFilePaths(root, scan),
        ...(opts.instructions === false ? [] : instructionFilePaths(root, scan)),
      ];
    })),
  ];
}

/** True when `path` is `root` or lies under it (both absolute; `..foo` is a name inside). */
export function within(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/**
 * What a guarded path is: one of PML's control files, a host-run file (`protected`), or an
 * instruction file.
 */
export interface GuardedHit {
  readonly path: string;
  readonly kind: "control" | "protected" | "instruction";
  /** The folder it belongs to (the workspace or a write grant). */
  readonly root: string;
}

/**
 * The guarded file that a write to `realPath` would change under one of `roots`, or `undefined`:
 * the file itself, something inside it, or a folder holding it. Control files win over host-run
 * ones (`.vscode/mcp.json` is PML's), host-run ones over instruction files. Besides the listed
 * paths, judged by shape: what git reads in any git dir (`sub/.git/config`, a bare repository's
 * `hooks/`), a gitfile or a `HEAD` that would make a folder a git dir, a `*.code-workspace`, and an
 * instruction file's name in any folder.
 */
export function guardedPathHit(realPath: string, roots: readonly string[]): GuardedHit | undefined {
  for (const root of roots) {
    const control = controlPathHit(realPath, root);
    if (control) return { path: control, kind: "control", root };
  }
  for (const root of roots) {
    for (const path of protectedFilePaths(root)) {
      if (within(realPath, path) || within(path, realPath)) {
        return { path, kind: "protected", root };
      }
    }
  }
  for (const root of roots) {
    if (!within(realPath, root)) continue;
    const git = gitControlHit(realPath, root);
    if (git) return { path: git, kind: "protected", root };
    if (basename(realPath).endsWith(".code-workspace")) {
      return { path: realPath, kind: "protected", root };
    }
  }
  for (const root of roots) {
    for (const path of instructionFilePaths(root)) {
      if (within(realPath, path) || within(path, realPath)) {
        return { path, kind: "instruction", root };
      }
    }
    if (!within(realPath, root)) continue;
    const named = relative(root, realPath).split(sep).findIndex((s) =>
      INSTRUCTION_NAMES.includes(s)
    );
    if (named >= 0) {
      const path = join(root, ...relative(root, realPath).split(sep).slice(0, named + 1));
      return { path, kind: "instruction", root };
    }
  }
  return undefined;
}

/**
 * The git file a write to `realPath` (under `root`) would change, judged by shape: a name git reads
 * in the nearest git dir holding it (or in a git dir below it: `modules/x/config`), a `.git` entry (a gitfile naming any folder as a git dir), or
 * a `HEAD` in a folder that is no git dir yet (one made by hand). `undefined` otherwise.
 */
function gitControlHit(realPath: string, root: string): string | undefined {
  const name = basename(realPath);
  if (name === ".git") return realPath;
  if (name === "HEAD" && !isGitDir(dirname(realPath))) return realPath;
  for (let dir = dirname(realPath); within(dir, root); dir = dirname(dir)) {
    if (isGitDir(dir)) {
      // Within its `modules/` and `worktrees/` too (the git dirs of submodules and worktrees).
      const parts = relative(dir, realPath).split(sep);
      const at = parts.findIndex((part) => GIT_DIR_CONTROL.includes(part));
      return at < 0 ? undefined : join(dir, ...parts.slice(0, at + 1));
    }
    if (dir === root) break;
  }
  return undefined;
}

/** Whether `dir` is a `.git` folder or shaped as a git dir. */
function isGitDir(dir: string): boolean {
  if (basename(dir) === ".git") return true;
  const names = new Set<string>();
  for (const name of ["HEAD", "objects", "refs", "commondir", "config"]) {
    try {
      Deno.lstatSync(join(dir, name));
      names.add(name);
    } catch { /* absent */ }
  }
  return isGitDirShape(names);
}

/**
 * The control file that a write to `realPath` would change, or `undefined`. A path is a control
 * path when it is a control file, lies inside one (`.pml/…`), or contains one (moving or deleting
 * `.vscode/` or the workspace itself would take `.vscode/mcp.json` with it). Comparison is on real
 * paths, case-sensitively (Linux); a hard link to a control file is caught by `sameFileAsControl`.
 */
export function controlPathHit(realPath: string, workspace: string): string | undefined {
  for (const control of controlFilePaths(workspace)) {
    if (within(realPath, control) || within(control, realPath)) return control;
  }
  return undefined;
}

/**
 * The control file that `realPath` is a hard link of (same device and inode), or `undefined`.
 * Only checked for existing regular files with more than one link.
 */
export function sameFileAsControl(
  realPath: string,
  workspace: string,
  guarded: readonly string[] = controlFilePaths(workspace),
): string | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(realPath);
  } catch {
    return undefined;
  }
  if (!info.isFile || (info.nlink ?? 1) < 2) return undefined;
  for (const control of guarded) {
    try {
      const c = Deno.statSync(control);
      if (c.isFile && c.ino === info.ino && c.dev === info.dev) return control;
    } catch { /* missing control file */ }
  }
  return undefined;
}
