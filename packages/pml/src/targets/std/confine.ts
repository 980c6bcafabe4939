import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { PmlError } from "../../errors.ts";
import {
  type GuardedHit,
  guardedPathHit,
  guardedPaths,
  sameFileAsControl,
} from "../../config/control_files.ts";

/** Roots a local tool may touch: the workspace plus the extra grants of `.pml.json`. */
export interface PathRoots {
  readonly workspace: string;
  readonly read: readonly string[];
  readonly write: readonly string[];
  /**
   * Folders no tool reads or writes whatever the grants say: PML's own home (its credentials, trust
   * store, approvals; `sandbox/policy.ts` `pmlHomes`).
   */
  readonly hidden?: readonly string[];
}

function inside(path: string, root: string): boolean {
  const rel = relative(root, path);
  // `..foo` is a name inside the root; only `..` itself or `../…` leave it.
  return rel === "" || (rel !== ".." && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

/**
 * Real path of `path`, or for a path that does not exist yet, the real path of its nearest existing
 * ancestor joined with the rest. A dangling symbolic link is refused (writing through it would
 * create a file wherever it points).
 */
export function realPathForAccess(path: string): string {
  const missing: string[] = [];
  let current = path;
  for (;;) {
    try {
      const real = Deno.realPathSync(current);
      return missing.length ? join(real, ...missing.reverse()) : real;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
      let isLink = false;
      try {
        isLink = Deno.lstatSync(current).isSymlink;
      } catch { /* does not exist at all */ }
      if (isLink) {
        throw new PmlError(
          "PATH_OUTSIDE_WORKSPACE",
          `"${current}" is a symbolic link to a missing target`,
        );
      }
      const parent = dirname(current);
      if (parent === current) return path;
      missing.push(basename(current));
      current = parent;
    }
  }
}

/**
 * Resolves a path argument of a local tool and checks that it stays inside the workspace (or an
 * extra grant for that kind of access), symbolic links included. Returns the absolute real path.
 *
 * @example
 * ```ts
 * confinePath("src/a.ts", "read", { workspace: "/p", read: [], write: [] }); // "/p/src/a.ts"
 * ```
 */
export function confinePath(input: unknown, access: "read" | "write", roots: PathRoots): string {
  if (typeof input !== "string" || input === "") {
    throw new TypeError("Path argument must be a non-empty string");
  }
  if (input.includes("\0")) {
    throw new TypeError(`Path "${input.replace(/\0/g, "\\0")}" contains a NUL byte`);
  }
  const verb = access === "read" ? "read" : "write";
  const absolute = resolve(roots.workspace, input);
  const real = realPathForAccess(absolute);
  const hidden = (roots.hidden ?? []).find((h) =>
    inside(real, h) || (access === "write" && inside(h, real))
  );
  if (hidden !== undefined) {
    throw new PmlError(
      "PATH_OUTSIDE_WORKSPACE",
      `Cannot ${verb} "${input}": ${inside(real, hidden) ? "it is in" : "it holds"} PML's own ` +
        `home "${hidden}" (its credentials, trust store and approvals), which no tool may ` +
        "read or write, whatever .pml.json grants",
      { details: { path: input, resolved: real } },
    );
  }
  const grants = access === "read" ? [...roots.read, ...roots.write] : roots.write;
  if (inside(real, roots.workspace) || grants.some((g) => inside(real, g))) {
    if (access === "write") refuseGuardedFile(input, real, [roots.workspace, ...roots.write]);
    return real;
  }
  const via = real !== absolute ? ` (it resolves to "${real}")` : "";
  throw new PmlError(
    "PATH_OUTSIDE_WORKSPACE",
    `Cannot ${verb} "${input}": path is outside the workspace "${roots.workspace}"${via}`,
    { details: { path: input, resolved: real } },
  );
}

/**
 * Refuses a write that would change one of PML's control files (`.pml.json`, `.pml/`, `.mcp.json`,
 * the client configs) or a protected file the host runs later (`.git/config`, `.git/hooks/`, shell
 * rc files, `.vscode/`, `.claude/`, …) of the workspace or of a write grant: the path itself (as it
 * resolves: a symlink `notes.txt` → `.git/config` is `.git/config`), a folder holding one, or a hard
 * link to one.
 */
function refuseGuardedFile(input: string, real: string, roots: readonly string[]): void {
  const hit = guardedPathHit(real, roots) ??
    linkedHit(real, roots);
  // An instruction file is the human's question, not a refusal (`instruction_files.ts`).
  if (hit === undefined || hit.kind === "instruction") return;
  const how = hit.path === real ? "it is" : "it would change";
  const name = relative(hit.root, hit.path) || hit.path;
  const shown = hit.root === roots[0] ? name : hit.path;
  const via = input !== real && resolve(roots[0], input) !== real
    ? ` (it resolves to "${real}")`
    : "";
  const details = { path: input, resolved: real, [hit.kind]: shown };
  if (hit.kind === "control") {
    throw new PmlError(
      "CONTROL_FILE",
      `Cannot write "${input}"${via}: ${how} PML's control file "${shown}", which only you (or ` +
        "pml on your decision) may change; edit it by hand",
      { details },
    );
  }
  throw new PmlError(
    "PROTECTED_FILE",
    `Cannot write "${input}"${via}: ${how} "${shown}", a file your tools run or read as ` +
      "configuration later (git, your shell, a package manager or build tool, your editor or " +
      "agent), which no tool may change; edit it by hand",
    { details },
  );
}

/** The guarded file `real` is a hard link of, as a hit. */
function linkedHit(real: string, roots: readonly string[]): GuardedHit | undefined {
  for (const root of roots) {
    const path = sameFileAsControl(real, root, guardedPaths([root]));
    if (path) {
      return guardedPathHit(path, [root]) ?? { path, kind: "protected", root };
    }
  }
  return undefined;
}
