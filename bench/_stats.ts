import { liveProcesses } from "../packages/pml/src/procfs.ts";

/** Small statistics helpers shared by the benchmarks. */

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export const median = (samples: number[]) => percentile(samples, 50);

export function fmtMs(ms: number): string {
  return ms < 1 ? `${(ms * 1000).toFixed(0)} µs` : `${ms.toFixed(2)} ms`;
}

/** Prints a table row: label, median, p99, and ratio to a baseline median. */
export function row(label: string, samples: number[], baseline?: number[]): string {
  const m = median(samples);
  const ratio = baseline ? `  ratio ${(m / median(baseline)).toFixed(2)}×` : "";
  return `${label.padEnd(44)} median ${fmtMs(m).padStart(9)}  p99 ${
    fmtMs(percentile(samples, 99)).padStart(9)
  }${ratio}`;
}

/** Resident memory (kB) of a process and all its descendants (Linux /proc). */
export function treeRssKb(pid: number): number {
  return sumOverTree(pid, `status`, /VmRSS:\s+(\d+)/);
}

/**
 * Proportional set size (kB) of a process and all its descendants: each shared page counted once
 * in all, split between the processes that map it (the Deno binary's pages, mapped by the gateway
 * and by each sandbox, count once here and once per process in {@link treeRssKb}).
 */
export function treePssKb(pid: number): number {
  return sumOverTree(pid, `smaps_rollup`, /^Pss:\s+(\d+)/m);
}

/**
 * CPU time (user + system, in clock ticks of 10 ms) that a process and all its descendants have
 * used so far, from field 14 and 15 of `/proc/<pid>/stat`.
 */
export function treeCpuTicks(pid: number): number {
  return sumOverTree(pid, "stat", (text) => {
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return Number(f[11]) + Number(f[12]);
  });
}

/**
 * CPU time (ms, user + system) that the threads of process `pid` alive now have used, from
 * `/proc/<pid>/task/<tid>/schedstat` (nanoseconds, where `/proc/<pid>/stat` counts 10 ms ticks).
 */
export function processCpuMs(pid: number): number {
  let ns = 0;
  for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/schedstat`).split(" ")[0]);
    } catch { /* the thread ended meanwhile */ }
  }
  return ns / 1e6;
}

function sumOverTree(pid: number, file: string, field: RegExp | ((text: string) => number)) {
  const read = typeof field === "function" ? field : (text: string) => {
    const m = text.match(field);
    return m ? Number(m[1]) : 0;
  };
  const children = new Map<number, number[]>();
  for (const p of liveProcesses()) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  let total = 0;
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop()!;
    try {
      total += read(Deno.readTextFileSync(`/proc/${p}/${file}`));
    } catch { /* gone */ }
    stack.push(...(children.get(p) ?? []));
  }
  return total;
}

/** One row of the table `deno task bench` prints at the end (and writes into docs/speed.md). */
export interface Figure {
  /** Stable key; the table is sorted by it. */
  readonly id: string;
  /** What is measured. */
  readonly what: string;
  /** The measured figure, with its anchor (the baseline of the same run) when there is one. */
  readonly now: string;
  /** The target, in words ("≤ 1.3×"). */
  readonly target: string;
  /** Whether `now` meets `target` (absent for an anchor row, which has no target). */
  readonly met?: boolean;
  /** The bench that measures it (`deno task bench <bench>`). */
  readonly bench: string;
}

/** The prefix of a figure line on a bench's stdout; `bench/main.ts` collects these lines. */
export const FIGURE_PREFIX = "::figure:: ";

/** Reports a figure of the summary table (one line on stdout, read by `bench/main.ts`). */
export function figure(f: Figure): void {
  console.log(FIGURE_PREFIX + JSON.stringify(f));
}

/** `a / b` as a ratio with two decimals ("1.23×"). */
export function ratio(a: number, b: number): string {
  return `${(a / b).toFixed(2)}×`;
}

/** Milliseconds of each of `n` sequential runs of `call`. */
export async function timeCalls(call: () => Promise<void>, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await call();
    out.push(performance.now() - t0);
  }
  return out;
}
