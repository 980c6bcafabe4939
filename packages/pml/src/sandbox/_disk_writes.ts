/**
 * Bytes a sandbox wrote to disk, for the per-call quota watchdog (`SandboxProcess`): the sum of
 * `write_bytes` in `/proc/<pid>/io` over the sandbox's live processes. A process's own line
 * includes what its reaped children wrote, so each byte is counted once while the process that
 * reaped its writer lives (the sandbox's init and runner live as long as the sandbox). tmpfs
 * writes are not disk writes: `/tmp` has its own size.
 *
 * @module
 */

/** `write_bytes` of `pid`, 0 when it is gone or unreadable. */
function writeBytes(pid: number): number {
  try {
    const m = /^write_bytes: (\d+)$/m.exec(Deno.readTextFileSync(`/proc/${pid}/io`));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** The disk bytes written by `root` and every live process below it (`children` lists one's). */
export function diskBytesUnder(root: number, children: (pid: number) => number[]): number {
  let total = 0;
  const stack = [root];
  while (stack.length) {
    const pid = stack.pop()!;
    total += writeBytes(pid);
    stack.push(...children(pid));
  }
  return total;
}
