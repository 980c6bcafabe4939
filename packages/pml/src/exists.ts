/**
 * Whether `path` names a file or folder (through symlinks; a dangling link does not exist), as
 * `node:fs` `existsSync` answers it: any error, a missing permission too, reads as "no".
 *
 * Deno's own `statSync`, so that the gateway's start does not load `node:fs` (~8 ms of Deno's
 * Node compatibility layer before the first `tools/list`, measured in docs/speed.md).
 */
export function exists(path: string): boolean {
  return statSucceeds(Deno.statSync, path);
}

/**
 * Whether `path` names an entry of its folder, the link itself for a symlink (a dangling link
 * exists): any error reads as "no".
 */
export function entryExists(path: string): boolean {
  return statSucceeds(Deno.lstatSync, path);
}

function statSucceeds(stat: (path: string) => unknown, path: string): boolean {
  try {
    stat(path);
    return true;
  } catch {
    return false;
  }
}

/** The real path of `path` (symlinks followed), or `undefined` when it does not exist. */
export function realPathOf(path: string): string | undefined {
  try {
    return Deno.realPathSync(path);
  } catch {
    return undefined;
  }
}

/**
 * `"<device>:<inode>:<birth time>"` of the entry `path` names (the link itself for a symlink), or
 * `undefined` when there is none: what tells a file removed and created again (or replaced by a
 * rename, as editors and `git` save) from the one that was there, even where the file system gives
 * the new one the freed inode number (the birth time in ms, where the file system keeps one).
 */
export function entryIdentity(path: string): string | undefined {
  try {
    const info = Deno.lstatSync(path);
    return `${info.dev}:${info.ino}:${info.birthtime?.getTime() ?? ""}`;
  } catch {
    return undefined;
  }
}
