/**
 * The limits a sandbox's supervisor enforces by watching, where the kernel's (`limits.ts`) do not
 * reach or as their backstop: its resident memory, and during a call the processes under it and
 * the bytes they write to disk, each read every 100 ms. Above a limit the watchdog calls `stop`
 * with the reason the calls in flight fail with.
 *
 * @module
 */
import { descendantCount, taskChildren } from "../procfs.ts";
import { diskBytesUnder } from "./_disk_writes.ts";
import { denoProcessUnder, rssKb } from "./sandbox_tree.ts";

/** The limits to watch (each unset one is not watched), in the units of `SandboxSpec`. */
export interface WatchedLimits {
  readonly maxRssMb?: number;
  readonly maxProcesses?: number;
  readonly maxWriteMb?: number;
}

/**
 * Starts the watchdogs of `limits` over the sandbox whose outer process is `pid` (`landlock`: its
 * init is PML's launcher, not bubblewrap). `busy` says whether a call is in flight. Returns what
 * stops them.
 */
export function watchLimits(
  pid: number,
  limits: WatchedLimits,
  opts: { landlock: boolean; busy: () => boolean; stop: (reason: string) => void },
): () => void {
  const memory = limits.maxRssMb ? watchMemory(pid, limits.maxRssMb, opts) : undefined;
  const processes = limits.maxProcesses || limits.maxWriteMb
    ? watchProcesses(pid, limits.maxProcesses ?? Infinity, limits.maxWriteMb ?? Infinity, opts)
    : undefined;
  return () => {
    clearInterval(memory);
    clearInterval(processes);
  };
}

/**
 * Stops the sandbox when its resident memory passes `limitMb`. The measured process is the Deno
 * one: the child itself, or inside bubblewrap the Deno process under it (found once it exists).
 */
function watchMemory(
  pid: number,
  limitMb: number,
  opts: { landlock: boolean; stop: (reason: string) => void },
): ReturnType<typeof setInterval> {
  let target: number | undefined;
  const timer = setInterval(() => {
    target ??= denoProcessUnder(pid, opts.landlock);
    if (target === undefined) return;
    const kb = rssKb(target);
    if (kb !== undefined && kb > limitMb * 1024) {
      opts.stop(
        `the sandbox used ${
          Math.round(kb / 1024)
        } MiB of memory (limit ${limitMb} MiB) and was stopped`,
      );
    }
  }, 100);
  Deno.unrefTimer(timer);
  return timer;
}

/**
 * Stops the sandbox when, during a call, more than `limit` processes run under it, or more
 * than `writeMb` MiB were written to disk since the call started.
 */
function watchProcesses(
  pid: number,
  limit: number,
  writeMb: number,
  opts: { busy: () => boolean; stop: (reason: string) => void },
): ReturnType<typeof setInterval> {
  let before: number | undefined;
  const timer = setInterval(() => {
    if (!opts.busy()) {
      before = undefined; // idle: nothing of a command can run
      return;
    }
    const count = limit === Infinity ? 0 : descendantCount(pid);
    if (count > limit) {
      opts.stop(`the sandbox ran more than ${limit} processes (${count}) and was stopped`);
      return;
    }
    if (writeMb === Infinity) return;
    const written = diskBytesUnder(pid, taskChildren);
    before ??= written;
    if (written - before > writeMb * 1024 * 1024) {
      opts.stop(
        `the sandbox wrote more than ${writeMb} MiB to disk in one call (${
          Math.round((written - before) / 1024 / 1024)
        } MiB) and was stopped`,
      );
    }
  }, 100);
  Deno.unrefTimer(timer);
  return timer;
}
