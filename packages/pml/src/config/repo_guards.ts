/**
 * The files of every repository of a folder that git reads to find configuration, hooks or other
 * git dirs (DESIGN §13 "Protected files"): in each git dir the walk finds (`workspace_scan.ts`: the
 * root's `.git`, nested repositories, submodules' `.git/modules/<name>`, linked worktrees'
 * `.git/worktrees/<name>`, bare repositories), its `config`, `config.worktree`, `commondir`,
 * `gitdir` and `hooks/`; every gitfile (`sub/.git` naming a git dir); and the hooks folder a config
 * names with `core.hooksPath` (`.husky/_`, `.githooks`). Whether or not they exist: those that do are
 * bound read-only, the others are watched (a command that creates one has it checked or removed,
 * `targets/std/created_guarded.ts`).
 *
 * @module
 */
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import type { WorkspaceScan } from "./workspace_scan.ts";

/** What git reads in a git dir to find configuration, hooks or another git dir. */
export const GIT_DIR_CONTROL: readonly string[] = [
  "config",
  "config.worktree",
  "commondir",
  "gitdir",
  "hooks",
];

/** Absolute paths of the repositories' guarded files under `root`, from its walk `scan`. */
export function repoGuardedPaths(root: string, scan: WorkspaceScan): string[] {
  const out: string[] = [];
  for (const gitDir of scan.gitDirs) {
    for (const name of GIT_DIR_CONTROL) out.push(join(gitDir, name));
  }
  out.push(...scan.gitFiles);
  // A gitlink of an index (a submodule entry) makes the host's `git status` enter that folder's
  // repository, wherever it is (`node_modules/x/.git`, which the walk does not enter).
  for (const gitDir of scan.gitDirs) {
    if (basename(gitDir) !== ".git") continue;
    for (const rel of gitlinks(join(gitDir, "index"))) {
      const dotGit = join(dirname(gitDir), rel, ".git");
      out.push(dotGit, ...GIT_DIR_CONTROL.map((name) => join(dotGit, name)));
    }
  }
  for (
    const config of [
      join(root, ".git", "config"),
      ...scan.gitDirs.map((d) => join(d, "config")),
    ]
  ) {
    const dir = hooksPath(config);
    const path = dir && (isAbsolute(dir) ? dir : resolve(root, dir));
    // A hooks folder that would hold the whole project is no folder of hooks: left out.
    if (path && relative(path, root).startsWith("..")) out.push(path);
  }
  return [...new Set(out)];
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

/** The index's file mode of a gitlink (a submodule's commit). */
const GITLINK = 0o160000;

/**
 * The paths of the gitlinks in a git index file (versions 2 to 4; SHA-1 or SHA-256 object ids,
 * told apart by the entry that parses). Empty when there is no index or it cannot be read.
 */
export function gitlinks(indexPath: string): string[] {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(indexPath);
  } catch {
    return [];
  }
  // Read again only when the index changed (a large repository's index is megabytes).
  const stamp = `${info.ino}:${info.size}:${info.mtime?.getTime()}`;
  const known = parsedIndexes.get(indexPath);
  if (known?.stamp === stamp) return known.links;
  let links: string[] = [];
  try {
    const buf = Deno.readFileSync(indexPath);
    links = parseGitlinks(buf, 20) ?? parseGitlinks(buf, 32) ?? [];
  } catch { /* removed meanwhile */ }
  parsedIndexes.set(indexPath, { stamp, links });
  return links;
}

const parsedIndexes = new Map<string, { stamp: string; links: string[] }>();

function parseGitlinks(buf: Uint8Array, oidSize: number): string[] | undefined {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  if (buf.length < 12 || new TextDecoder().decode(buf.subarray(0, 4)) !== "DIRC") return [];
  const version = view.getUint32(4);
  const count = view.getUint32(8);
  const out: string[] = [];
  let at = 12;
  let previous: Uint8Array = new Uint8Array();
  for (let n = 0; n < count; n++) {
    const start = at;
    if (at + 40 + oidSize + 2 > buf.length) return undefined;
    const mode = view.getUint32(at + 24);
    const flags = view.getUint16(at + 40 + oidSize);
    at += 40 + oidSize + 2 + (version >= 3 && flags & 0x4000 ? 2 : 0);
    let path: Uint8Array;
    if (version === 4) {
      let c = buf[at++];
      let strip = c & 127;
      while (c & 128) {
        c = buf[at++];
        strip = ((strip + 1) << 7) + (c & 127);
      }
      const end = buf.indexOf(0, at);
      if (end < 0 || strip > previous.length) return undefined;
      path = new Uint8Array([
        ...previous.subarray(0, previous.length - strip),
        ...buf.subarray(at, end),
      ]);
      at = end + 1;
    } else {
      const end = buf.indexOf(0, at);
      if (end < 0) return undefined;
      path = buf.subarray(at, end);
      at = start + Math.ceil((end - start + 1) / 8) * 8;
    }
    previous = path;
    const kind = mode & 0o170000;
    if (![0o100000, 0o120000, GITLINK].includes(kind)) return undefined;
    if (kind === GITLINK) out.push(new TextDecoder().decode(path));
  }
  return out;
}
