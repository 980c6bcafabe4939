/**
 * Process facts read from Linux `/proc`: used by the dependency supervisor to reap orphans, and by
 * tests and benches that count processes.
 *
 * @module
 */

/** The fields of `/proc/<pid>/stat` that PML uses. */
export interface ProcStat {
  readonly pid: number;
  /** `R`, `S`, …; `Z` for a zombie (dead, not yet reaped). */
  readonly state: string;
  readonly ppid: number;
  readonly pgid: number;
  /** Start time in clock ticks since boot (field 22): tells a reused pid from the original. */
  readonly start: string;
}

/** The stat of `pid`, zombies included; `undefined` when there is no such process. */
export function procStat(pid: number | string): ProcStat | undefined {
  let stat: string;
  try {
    stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: split after its last ")".
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { pid: Number(pid), state: f[0], ppid: Number(f[1]), pgid: Number(f[2]), start: f[19] };
}

/** True while `pid` runs (a zombie counts as dead). */
export function processAlive(pid: number): boolean {
  const s = procStat(pid);
  return s !== undefined && s.state !== "Z";
}

/** Every process that is running now (zombies left out unless asked for). */
export function liveProcesses(opts: { zombies?: boolean } = {}): ProcStat[] {
  const out: ProcStat[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync("/proc")];
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e.name)) continue;
    const s = procStat(e.name);
    if (s && (opts.zombies || s.state !== "Z")) out.push(s);
  }
  return out;
}

/** Live processes whose command line mentions `marker` (bubblewrap's own processes included). */
export function pidsMentioning(marker: string): number[] {
  return liveProcesses().filter((p) => {
    try {
      return Deno.readTextFileSync(`/proc/${p.pid}/cmdline`).includes(marker);
    } catch {
      return false;
    }
  }).map((p) => p.pid);
}

/** Pids of the running children of `pid` (with `zombies`, also the dead ones not yet reaped). */
export function childPids(pid: number, opts: { zombies?: boolean } = {}): number[] {
  return liveProcesses(opts).filter((p) => p.ppid === pid).map((p) => p.pid);
}

/**
 * Pids of the direct children of `pid`, from `/proc/<pid>/task/<tid>/children` (a few small reads,
 * where a scan of all `/proc` costs ~2 ms); from a scan of `/proc` when the kernel does not provide
 * that file.
 */
export function taskChildren(pid: number): number[] {
  const out: number[] = [];
  let tasks: Deno.DirEntry[];
  try {
    tasks = [...Deno.readDirSync(`/proc/${pid}/task`)];
  } catch {
    return out; // gone
  }
  for (const task of tasks) {
    let text: string;
    try {
      text = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/children`);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound && processAlive(pid)) return childPids(pid);
      continue; // the task ended
    }
    for (const word of text.split(" ")) if (word.trim()) out.push(Number(word));
  }
  return out;
}

/** How many processes run below `pid`. */
export function descendantCount(pid: number): number {
  let count = 0;
  const stack = [pid];
  while (stack.length) {
    for (const child of taskChildren(stack.pop()!)) {
      count++;
      stack.push(child);
    }
  }
  return count;
}

/**
 * Kills `pid` and its direct children with SIGKILL, leaving no window for a child to slip out:
 * `pid` is stopped first and its children are read once it has stopped (a fork in progress then
 * shows). For bubblewrap the child is the sandbox's init, whose death ends every process of the
 * sandbox: killing bwrap alone while a sandbox starts leaves the sandbox running (its init has no
 * parent-death signal yet) or blocked forever.
 */
export function killWithChildren(pid: number): void {
  try {
    Deno.kill(pid, "SIGSTOP");
  } catch {
    return; // already gone
  }
  // A stop lands when the process next leaves the kernel: microseconds, bounded here.
  for (let i = 0; i < 10_000; i++) {
    const state = procStat(pid)?.state;
    if (state === undefined || state === "T" || state === "t" || state === "Z") break;
  }
  for (const child of taskChildren(pid)) {
    try {
      Deno.kill(child, "SIGKILL");
    } catch { /* already gone */ }
  }
  try {
    Deno.kill(pid, "SIGKILL");
  } catch { /* already gone */ }
}

/**
 * Kills `pid` and every process below it with SIGKILL, for a sandbox without a pid namespace (the
 * Landlock wall): each process is stopped before its children are read (a fork in progress then
 * shows), top down, then all are killed. The sandbox's init is the child subreaper of its
 * processes, so what a command detached is below it too.
 */
export function killTree(pid: number): void {
  const stopped: number[] = [];
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop()!;
    try {
      Deno.kill(p, "SIGSTOP");
    } catch {
      continue; // gone
    }
    for (let i = 0; i < 10_000; i++) {
      const state = procStat(p)?.state;
      if (state === undefined || state === "T" || state === "t" || state === "Z") break;
    }
    stopped.push(p);
    stack.push(...taskChildren(p));
  }
  for (const p of stopped) {
    try {
      Deno.kill(p, "SIGKILL");
    } catch { /* already gone */ }
  }
}
