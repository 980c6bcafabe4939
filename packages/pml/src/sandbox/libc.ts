/**
 * Where the C library of this process is (the one Deno links against), for the sandboxes that
 * call `prctl` and `fcntl` through Deno's FFI (`_runner.ts`, `inherited_fds.ts`): read once from
 * `/proc/self/maps`. `undefined` where it cannot be found (not Linux, a static build).
 *
 * @module
 */
let found: string | null | undefined;

/** The absolute path of `libc.so.6` as this process mapped it, or `undefined`. */
export function libcPath(): string | undefined {
  if (found === undefined) {
    found = null;
    try {
      const maps = Deno.readTextFileSync("/proc/self/maps");
      const m = /\s(\/\S*\/libc\.so\.6)$/m.exec(maps);
      if (m) found = m[1];
    } catch { /* no /proc */ }
  }
  return found ?? undefined;
}
