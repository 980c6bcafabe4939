import { isAbsolute, join, relative, sep } from "node:path";

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

/** Absolute paths of the control files of `workspace` (whether or not they exist). */
export function controlFilePaths(workspace: string): string[] {
  return CONTROL_FILES.map((rel) => join(workspace, rel));
}

/** True when `path` is `root` or lies under it (both absolute; `..foo` is a name inside). */
export function within(path: string, root: string): boolean {
  const rel = relative(root, path);
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
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
export function sameFileAsControl(realPath: string, workspace: string): string | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(realPath);
  } catch {
    return undefined;
  }
  if (!info.isFile || (info.nlink ?? 1) < 2) return undefined;
  for (const control of controlFilePaths(workspace)) {
    try {
      const c = Deno.statSync(control);
      if (c.isFile && c.ino === info.ino && c.dev === info.dev) return control;
    } catch { /* missing control file */ }
  }
  return undefined;
}
