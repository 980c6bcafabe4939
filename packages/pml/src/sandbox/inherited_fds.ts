/**
 * Descriptors `pml` inherited from whoever started it (an MCP client, a shell: `pml stdio 3<file`)
 * beyond stdin, stdout and stderr. Every process `pml` starts (sandboxes, dependencies, npm) would
 * inherit them in turn, and a command in a sandbox could read or write what they point to outside
 * it. At start, `pml` marks them close-on-exec through the C library's `fcntl` (Deno has no call
 * for it): `pml` keeps them, no child gets them. Deno's own descriptors are close-on-exec already,
 * so the FFI is only loaded when an inherited one is found (`/proc/self/fdinfo` tells).
 *
 * @module
 */
import { libcPath } from "./libc.ts";

const O_CLOEXEC = 0o2000000;
const F_GETFD = 1;
const F_SETFD = 2;
const FD_CLOEXEC = 1;

/** Descriptors above 2 that children would inherit (not close-on-exec), from `/proc/self`. */
export function inheritableFds(): number[] {
  const out: number[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync("/proc/self/fdinfo")];
  } catch {
    return out; // no /proc: nothing to learn here
  }
  for (const entry of entries) {
    const fd = Number(entry.name);
    if (!(fd > 2)) continue;
    try {
      const flags = /^flags:\s+([0-7]+)/m.exec(Deno.readTextFileSync(`/proc/self/fdinfo/${fd}`));
      if (flags && (parseInt(flags[1], 8) & O_CLOEXEC) === 0) out.push(fd);
    } catch { /* closed meanwhile (the one that listed the folder) */ }
  }
  return out;
}

/**
 * Marks every inherited descriptor above 2 close-on-exec. Returns those it could not mark (none
 * when it worked; all of them where the C library or the FFI is not available).
 */
export function sealInheritedFds(): number[] {
  const fds = inheritableFds();
  if (fds.length === 0) return [];
  const libc = libcPath();
  if (!libc) return fds;
  let lib;
  try {
    lib = Deno.dlopen(libc, { fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" } });
  } catch {
    return fds;
  }
  const left = fds.filter((fd) => {
    const flags = lib.symbols.fcntl(fd, F_GETFD, 0);
    return flags < 0 || lib.symbols.fcntl(fd, F_SETFD, flags | FD_CLOEXEC) !== 0;
  });
  lib.close();
  return left;
}
