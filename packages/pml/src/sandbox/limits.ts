/**
 * Resource limits of a sandbox (DESIGN §13 "kernel limits on processes, memory and `/tmp`,
 * watchdogs as backstop"), as part of its policy. The kernel enforces them:
 * - `/tmp` and `/dev/shm` are tmpfs mounts of a fixed size (`bwrap --size`): a write past it fails
 *   with `ENOSPC` (tmpfs is memory: this is also what bounds the Cache API of `pml:execute`, kept
 *   under `/tmp`);
 * - `RLIMIT_NPROC` (tasks, threads included) and `RLIMIT_FSIZE` (largest file a process writes:
 *   past it the write fails and the writer gets `SIGXFSZ`), set inside the sandbox's user namespace
 *   by `prlimit` before its command starts. `RLIMIT_NPROC` is counted per uid of that namespace,
 *   so only the sandbox's own tasks count; the kernel ignores it for host uid 0, so when `pml` runs
 *   as root a control group (`cgroup.ts`) caps the tasks, and memory too, where it can be created;
 * - the watchdogs of `_watchdogs.ts` stop the sandbox above its process count, its resident
 *   memory (`pml:execute`) or the bytes written to disk during one call.
 *
 * @module
 */

/** The limits of one sandbox. */
export interface SandboxLimits {
  /** Tasks (processes and threads) the sandbox may hold at once. */
  readonly tasks: number;
  /** Size of its `/tmp` (which holds its `HOME` when it has none, and Deno's cache) in MiB. */
  readonly tmpMb: number;
  /** Size of its `/dev/shm` in MiB. */
  readonly shmMb: number;
  /** Largest file one of its processes may write, in MiB. */
  readonly fileMb: number;
  /** Memory of the whole sandbox, tmpfs included, where a control group can hold it. */
  readonly memoryMb: number;
}

/** Programs (`shell:exec`, stdio dependencies): room for builds, package managers and tests. */
export const PROGRAM_LIMITS: SandboxLimits = {
  tasks: 1024,
  tmpMb: 512,
  shmMb: 64,
  fileMb: 1024,
  memoryMb: 4096,
};

/** Deno code alone (std read/write tools, registry modules, `pml:execute`). */
export const DENO_LIMITS: SandboxLimits = {
  // Deno's own threads (V8 workers, one per core; its blocking I/O pool) count here.
  tasks: 512,
  tmpMb: 64,
  shmMb: 16,
  fileMb: 1024,
  memoryMb: 1024,
};

const MIB = 1024 * 1024;

/** The `bwrap` arguments of the sized `/tmp` (and the `/dev/shm` after `--dev /dev`). */
export function tmpfsArgs(limits: SandboxLimits, path: "/tmp" | "/dev/shm"): string[] {
  const mb = path === "/tmp" ? limits.tmpMb : limits.shmMb;
  return ["--size", String(mb * MIB), "--tmpfs", path];
}

const PRLIMIT = ["/usr/bin/prlimit", "/bin/prlimit"].find((path) => {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
});

/**
 * `command` under the sandbox's rlimits (`prlimit`, from util-linux); as given where there is no
 * `prlimit` (the watchdogs and the tmpfs sizes still hold).
 */
export function withRlimits(limits: SandboxLimits, command: readonly string[]): string[] {
  if (!PRLIMIT) return [...command];
  return [
    PRLIMIT,
    `--nproc=${limits.tasks}`,
    `--fsize=${limits.fileMb * MIB}`,
    "--",
    ...command,
  ];
}
