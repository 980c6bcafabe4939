import { isAbsolute, join, relative, sep } from "node:path";
import { repoGuardedPaths } from "./repo_guards.ts";

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
 * Files the host runs or reads as configuration later (DESIGN §13 "Protected files"), relative to
 * any folder a tool may write (the workspace and every write grant): shell start-up files, git's
 * configuration and hooks, editors' and agents' project settings (tasks, hooks, commands). Guarded
 * like the control files: never written, moved, deleted or created by a tool or sandboxed code.
 * `.git/` itself stays writable (objects, index, refs, logs): only its config and hooks are
 * protected.
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
  ".git/hooks",
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

/** Absolute paths of the control files of `workspace` (whether or not they exist). */
export function controlFilePaths(workspace: string): string[] {
  return CONTROL_FILES.map((rel) => join(workspace, rel));
}

/**
 * Absolute paths of the protected files under `root` (whether or not they exist), with those its
 * repository names (submodules' configs and hooks, `core.hooksPath`: `repo_guards.ts`).
 */
export function protectedFilePaths(root: string): string[] {
  return [...PROTECTED_FILES.map((rel) => join(root, rel)), ...repoGuardedPaths(root)];
}

/**
 * Everything no tool may write under the folders it may write (`roots`: the workspace and the
 * write grants): each root's control files and protected files. A granted other project keeps its
 * own `.pml.json` and `.git/config` too.
 */
export function guardedPaths(roots: readonly string[]): string[] {
  return [
    ...new Set(roots.flatMap((root) => [...controlFilePaths(root), ...protectedFilePaths(root)])),
  ];
}

/** True when `path` is `root` or lies under it (both absolute; `..foo` is a name inside). */
export function within(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/** What a guarded path is: one of PML's control files or a file the host runs later. */
export interface GuardedHit {
  readonly path: string;
  readonly kind: "control" | "protected";
  /** The folder it belongs to (the workspace or a write grant). */
  readonly root: string;
}

/**
 * The guarded file (control or protected) that a write to `realPath` would change under one of
 * `roots`, or `undefined`: the file itself, something inside it, or a folder holding it. Control
 * files win over protected ones (`.vscode/mcp.json` is PML's).
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
  return undefined;
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
