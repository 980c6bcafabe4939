import { dirname, join, resolve } from "node:path";
import { entryExists } from "../exists.ts";

/** Files whose presence marks a project root (DESIGN §4). */
export const WORKSPACE_MARKERS = [
  ".git",
  "deno.json",
  "deno.jsonc",
  "package.json",
  ".pml.json",
] as const;

/** Where the workspace came from: the env variable, a project marker, or the fallback. */
export type WorkspaceSource = "env" | "marker" | "cwd";

/** A resolved workspace: an absolute real path and how it was found. */
export interface ResolvedWorkspace {
  readonly path: string;
  readonly source: WorkspaceSource;
  /** Set for the cwd fallback: the warning to print on stderr. */
  readonly warning?: string;
}

/**
 * Resolves the workspace: `PML_WORKSPACE` → nearest parent of `cwd` holding a marker file →
 * `cwd` (with a warning). The result is a real path (symlinks resolved).
 *
 * @example
 * ```ts
 * const ws = resolveWorkspace({ env: { PML_WORKSPACE: "/home/a/proj" }, cwd: "/tmp" });
 * ws.source; // "env"
 * ```
 */
export function resolveWorkspace(
  opts: { env: Readonly<Record<string, string | undefined>>; cwd: string },
): ResolvedWorkspace {
  const fromEnv = opts.env.PML_WORKSPACE;
  if (fromEnv && fromEnv.trim() !== "" && !fromEnv.includes("${")) {
    const path = resolve(opts.cwd, fromEnv);
    let real: string;
    try {
      real = Deno.realPathSync(path);
    } catch {
      throw new TypeError(`PML_WORKSPACE "${fromEnv}" does not exist`);
    }
    if (!Deno.statSync(real).isDirectory) {
      throw new TypeError(`PML_WORKSPACE "${fromEnv}" is not a directory`);
    }
    return { path: real, source: "env" };
  }
  const start = Deno.realPathSync(opts.cwd);
  for (let dir = start;; dir = dirname(dir)) {
    if (WORKSPACE_MARKERS.some((m) => entryExists(join(dir, m)))) {
      return { path: dir, source: "marker" };
    }
    if (dirname(dir) === dir) break;
  }
  return {
    path: start,
    source: "cwd",
    warning:
      `pml: no project root found above "${start}" (no .git, deno.json, package.json or .pml.json); ` +
      `using the current directory as workspace. Set PML_WORKSPACE to choose one.`,
  };
}

/** `p` resolved against `base`, as a real path when it exists (symlinks followed). */
export function realOrResolved(base: string, p: string): string {
  const abs = resolve(base, p);
  try {
    return Deno.realPathSync(abs);
  } catch {
    return abs;
  }
}
