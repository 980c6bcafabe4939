/**
 * What a sandbox's supervisor reads of the processes under a sandbox's outer process from `/proc`:
 * the Deno runner inside it and its resident memory (the memory cap), and the strays left running
 * beside the runner (killed after each `shell:exec` command, `SandboxProcess.killStrays`).
 *
 * @module
 */
import { childPids, processAlive, type ProcStat, procStat, taskChildren } from "../procfs.ts";
import { LANDLOCK_LAUNCHER } from "./landlock_command.ts";

/** Resident memory of `pid` in KiB, from `/proc/<pid>/status`. */
export function rssKb(pid: number): number | undefined {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync(`/proc/${pid}/status`));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `pid` itself when it runs Deno, else the first Deno process below it (bubblewrap's child, or
 * the Landlock init's: `launcher` set, the launcher itself, which is Deno too, is not it).
 */
export function denoProcessUnder(pid: number, launcher = false): number | undefined {
  const stack = [pid];
  while (stack.length) {
    const p = stack.shift()!;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${p}/cmdline`);
      if (
        !cmdline.startsWith(`${Deno.execPath()}\0`) ||
        (launcher && cmdline.includes(LANDLOCK_LAUNCHER))
      ) {
        stack.push(...childPids(p));
        continue;
      }
      return p;
    } catch { /* gone */ }
  }
  return undefined;
}

/**
 * The live processes under the bubblewrap process `outer` that are neither bubblewrap nor the
 * runner (the first process bubblewrap's init started) nor below the runner. Behind Landlock
 * (`landlock`), `outer` is the init itself.
 */
export function straysOf(outer: number, landlock = false): number[] {
  // outer bwrap → bwrap as the namespace's init → runner; orphans are re-parented to the init.
  const strays: number[] = [];
  for (const init of landlock ? [outer] : taskChildren(outer)) {
    const below = taskChildren(init)
      .map((pid) => procStat(pid))
      .filter((p): p is ProcStat => p !== undefined)
      .sort((a, b) => Number(a.start) - Number(b.start));
    const stack = below.slice(1).map((p) => p.pid); // below[0] is the runner
    while (stack.length) {
      const pid = stack.pop()!;
      if (processAlive(pid)) strays.push(pid);
      stack.push(...taskChildren(pid));
    }
  }
  return strays;
}
