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

/** One kept entry: a file's bytes and mode, a link's target, or a folder. */
type Kept =
  | { readonly kind: "file"; readonly bytes: Uint8Array; readonly mode: number }
  | { readonly kind: "link"; readonly target: string }
  | { readonly kind: "dir"; readonly mode: number };

/** What was kept: each path under the guarded ones, with its state. */
export type GuardedSnapshot = ReadonlyMap<string, Kept>;

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

/** The state of every existing path of `guarded` and of everything under it. */
export function snapshotGuarded(guarded: readonly string[]): GuardedSnapshot {
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
  return out;
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
export function restoreGuarded(snapshot: GuardedSnapshot): string[] {
  const changed = new Set<string>();
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
      Deno.removeSync(inside, { recursive: true });
      changed.add(rootOf(path));
    }
  }
  // Folders first (parents before children), then files and links.
  const ordered = [...snapshot].sort(([a], [b]) => a.split("/").length - b.split("/").length);
  for (const [path, kept] of ordered) {
    const now = read(path);
    if (same(now, kept)) continue;
    changed.add(rootOf(path));
    if (now && (now.kind !== "dir" || kept.kind !== "dir")) {
      Deno.removeSync(path, { recursive: true });
    }
    if (kept.kind === "dir") {
      Deno.mkdirSync(path, { recursive: true });
      Deno.chmodSync(path, kept.mode);
    } else if (kept.kind === "link") {
      Deno.symlinkSync(kept.target, path);
    } else {
      Deno.writeFileSync(path, kept.bytes, { mode: kept.mode });
      Deno.chmodSync(path, kept.mode);
    }
  }
  return [...changed];
}
