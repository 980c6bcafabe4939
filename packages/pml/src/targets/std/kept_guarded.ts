/**
 * Guarded files (control and protected, `config/control_files.ts`) that exist, kept as they were
 * across a `shell:exec` command behind the Landlock wall. Landlock only allows: a right granted on
 * the workspace reaches every file under it, and the workspace must stay writable (new files at
 * its root, git's own files in `.git`), so it cannot keep `.git/config` read-only as bubblewrap's
 * read-only bind does. Instead the std target takes their content before the command and puts back
 * whatever the command changed, removed or added, and the result says so (docs/security.md: this
 * holds after the command, not during it).
 *
 * `.pml/audit.log` is left out: `pml` itself appends to it while a command runs.
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import { entryIdentity } from "../../exists.ts";

/** One kept entry: a file's bytes and mode, a link's target, or a folder. */
type Kept =
  | { readonly kind: "file"; readonly bytes: Uint8Array; readonly mode: number }
  | { readonly kind: "link"; readonly target: string }
  | { readonly kind: "dir"; readonly mode: number };

/**
 * What was kept: each path under the guarded ones, with its state; and where each guarded entry
 * and each folder on the way to one (`.git` of `.git/config`) was, by identity, to bring back one
 * a command moved away (`mv .git .git-old`).
 */
export interface GuardedSnapshot {
  readonly kept: ReadonlyMap<string, Kept>;
  readonly places: ReadonlyMap<string, { readonly id: string; readonly root: string }>;
}

/** Most bytes kept in all (a larger `.idea` is kept up to this and said so in docs). */
const MAX_BYTES = 16 * 1024 * 1024;
const MAX_ENTRIES = 4000;

/** Whether `pml` writes `path` itself during a call (left out of the snapshot). */
function ownedByPml(path: string): boolean {
  return basename(path) === "audit.log" && basename(dirname(path)) === ".pml";
}

function read(path: string): Kept | undefined {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(path);
  } catch {
    return undefined;
  }
  if (info.isSymlink) return { kind: "link", target: Deno.readLinkSync(path) };
  if (info.isDirectory) return { kind: "dir", mode: (info.mode ?? 0o755) & 0o7777 };
  return { kind: "file", bytes: Deno.readFileSync(path), mode: (info.mode ?? 0o644) & 0o7777 };
}

/**
 * The state of every existing path of `guarded` and of everything under it; `roots` are the
 * writable folders they lie in (the workspace, write grants).
 */
export function snapshotGuarded(
  guarded: readonly string[],
  roots: readonly string[],
): GuardedSnapshot {
  const places = new Map<string, { id: string; root: string }>();
  for (const path of guarded) {
    const root = roots.find((r) => path.startsWith(r + "/"));
    if (!root) continue;
    for (let p = path; p !== root && p.startsWith(root + "/"); p = dirname(p)) {
      // By identity (device, inode, birth time): an inode freed by the command can be reused.
      const id = entryIdentity(p);
      if (id !== undefined && !places.has(p)) places.set(p, { id, root });
    }
  }
  const out = new Map<string, Kept>();
  let bytes = 0;
  const take = (path: string) => {
    if (out.size >= MAX_ENTRIES || bytes >= MAX_BYTES || ownedByPml(path)) return;
    const kept = read(path);
    if (!kept) return;
    out.set(path, kept);
    if (kept.kind === "file") bytes += kept.bytes.length;
    if (kept.kind !== "dir") return;
    for (const entry of Deno.readDirSync(path)) take(join(path, entry.name));
  };
  for (const path of guarded) take(path);
  return { kept: out, places };
}

/** The path under `root` (at most 4 levels down, links not followed) of the entry `id`. */
function findEntry(root: string, id: string, depth = 0): string | undefined {
  if (depth > 4) return undefined;
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(root)];
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    const path = join(root, entry.name);
    if (entryIdentity(path) === id) return path;
    if (entry.isDirectory && !entry.isSymlink) {
      const found = findEntry(path, id, depth + 1);
      if (found) return found;
    }
  }
  return undefined;
}

/** Moves back the guarded entries and their folders a command moved away; the paths moved. */
function moveBack(places: GuardedSnapshot["places"]): string[] {
  const moved: string[] = [];
  const ordered = [...places].sort(([a], [b]) => a.split("/").length - b.split("/").length);
  for (const [path, { id, root }] of ordered) {
    if (entryIdentity(path) === id) continue;
    const found = findEntry(root, id);
    if (!found || found.startsWith(path + "/") || path.startsWith(found + "/")) continue;
    try {
      Deno.removeSync(path, { recursive: true }); // what the command put in its place
    } catch { /* none */ }
    try {
      Deno.renameSync(found, path);
      moved.push(path);
    } catch { /* its contents are put back below */ }
  }
  return moved;
}

function same(a: Kept | undefined, b: Kept): boolean {
  if (!a || a.kind !== b.kind) return false;
  if (a.kind === "link") return a.target === (b as typeof a).target;
  if (a.kind === "dir") return a.mode === (b as typeof a).mode;
  const other = b as typeof a;
  return a.mode === other.mode && a.bytes.length === other.bytes.length &&
    a.bytes.every((byte, i) => byte === other.bytes[i]);
}

/**
 * Puts every kept path back as it was (content, mode, link target) and removes what appeared
 * under a kept folder; returns the guarded paths (of `snapshot`'s roots) that had changed.
 */
export function restoreGuarded(guarded: GuardedSnapshot): string[] {
  const changed = new Set<string>(moveBack(guarded.places));
  const snapshot = guarded.kept;
  const roots = [...snapshot.keys()].filter((p) => !snapshot.has(dirname(p)));
  const rootOf = (path: string) => roots.find((r) => path === r || path.startsWith(r + "/"))!;
  // What appeared inside a kept folder.
  for (const [path, kept] of snapshot) {
    if (kept.kind !== "dir") continue;
    let entries: Deno.DirEntry[] = [];
    try {
      if (Deno.lstatSync(path).isDirectory) entries = [...Deno.readDirSync(path)];
    } catch { /* gone: put back below */ }
    for (const entry of entries) {
      const inside = join(path, entry.name);
      if (snapshot.has(inside) || ownedByPml(inside)) continue;
      try {
        Deno.removeSync(inside, { recursive: true });
      } catch { /* gone meanwhile */ }
      changed.add(rootOf(path));
    }
  }
  // Folders first (parents before children), then files and links.
  const ordered = [...snapshot].sort(([a], [b]) => a.split("/").length - b.split("/").length);
  for (const [path, kept] of ordered) {
    const now = read(path);
    if (same(now, kept)) continue;
    changed.add(rootOf(path));
    try {
      if (now && (now.kind !== "dir" || kept.kind !== "dir")) {
        Deno.removeSync(path, { recursive: true });
      }
      // Its folder too, when the command removed it (`git worktree remove` takes
      // `.git/worktrees/<name>` with its `commondir` and `gitdir`).
      Deno.mkdirSync(dirname(path), { recursive: true });
      if (kept.kind === "dir") {
        Deno.mkdirSync(path, { recursive: true });
        Deno.chmodSync(path, kept.mode);
      } else if (kept.kind === "link") {
        Deno.symlinkSync(kept.target, path);
      } else {
        Deno.writeFileSync(path, kept.bytes, { mode: kept.mode });
        Deno.chmodSync(path, kept.mode);
      }
    } catch { /* the others are still put back; the result names the root as changed */ }
  }
  return [...changed];
}
