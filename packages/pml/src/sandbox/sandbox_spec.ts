/**
 * What a sandbox may do, as data ({@link SandboxSpec}), and the Deno flags derived from it and
 * nothing else ({@link sandboxFlags}): the last wall, which holds even without an OS one. A pool
 * keys its sandboxes by these flags; `SandboxProcess` runs Deno with them.
 *
 * @module
 */
import { PmlError } from "../errors.ts";
import { CHANNEL_IN_FD, CHANNEL_OUT_FD, type OsPolicy } from "./os_sandbox.ts";

/** What a sandbox may do, as data: the Deno flags are derived from it and nothing else. */
export interface SandboxSpec {
  /** Entry module (absolute path) that calls `serveModules`. */
  readonly entry: string;
  readonly read: readonly string[];
  readonly write: readonly string[];
  readonly net: readonly string[];
  /** Unscoped `--allow-run` (only `shell:exec`). */
  readonly run: boolean;
  /** The only environment the process gets (no API keys). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Heap limit in MiB. */
  readonly maxHeapMb?: number;
  /**
   * A long-lived host of PML's own tool modules (the std tools), not of agent code: it runs
   * without V8's optimizing compilers (its work is file and process I/O; their code and zones
   * were ~7 MB of its resident memory) and collects its garbage once idle (`--expose-gc`).
   */
  readonly lean?: boolean;
  /**
   * Resident memory limit in MiB, array buffers included (V8's heap limit does not count them):
   * a watchdog reads the process's RSS every 100 ms and kills it above this.
   */
  readonly maxRssMb?: number;
  /**
   * Most processes the sandbox may hold while a call runs (a fork bomb): counted every 100 ms
   * under the sandbox's own process, which is killed above it.
   */
  readonly maxProcesses?: number;
  /**
   * Most bytes the sandbox may write to disk during one call (a disk filler), in MiB: counted
   * with the processes, every 100 ms; the sandbox is killed above it.
   */
  readonly maxWriteMb?: number;
  /**
   * The OS wall (bubblewrap) around the process, when the machine has one; without one the
   * process runs with its Deno flags only (the caller decides whether that is acceptable).
   */
  readonly os?: OsPolicy;
}

/**
 * V8 flags of a std tool sandbox: Ignition and Sparkplug only, no Maglev or TurboFan (their code
 * and compile zones cost resident memory for no gain on file and process I/O glue), and `gc` for
 * its idle collection. The gateway keeps its optimizing tiers (without them its per-call overhead
 * on `read_file` went from ~20 µs to ~250 µs in `deno task bench stdio`) and only exposes `gc`.
 */
export const LEAN_V8_FLAGS = "--no-opt,--no-maglev,--expose-gc";

/**
 * Deno flags for a spec: least privilege, no prompts, no config or lockfile from the workspace.
 * `channel`: the runner talks over descriptors 3 and 4 and seals itself with `prctl` through
 * the C library at `libc` (see `_runner.ts`), which these flags then let it open, and nothing else.
 */
export function sandboxFlags(spec: SandboxSpec, channel?: { libc: string }): string[] {
  if (channel) {
    const flags = sandboxFlags({
      ...spec,
      read: [...spec.read, `/proc/self/fd/${CHANNEL_IN_FD}`],
      write: [...spec.write, `/proc/self/fd/${CHANNEL_OUT_FD}`],
    });
    flags.splice(flags.length - 1, 0, `--allow-ffi=${channel.libc}`);
    return [...flags, `--pml-channel=${channel.libc}`];
  }
  for (const p of [...spec.read, ...spec.write]) {
    if (p.includes(",")) {
      throw new PmlError("SANDBOX_SPEC", `Cannot grant "${p}": path contains a comma`);
    }
  }
  const flags = ["run", "--no-prompt", "--no-config", "--no-lock", "--no-remote", "--quiet"];
  flags.push(
    `--v8-flags=--max-old-space-size=${spec.maxHeapMb ?? 256},--max-semi-space-size=1,` +
      `--optimize-for-size${spec.lean ? `,${LEAN_V8_FLAGS}` : ""}`,
  );
  if (spec.read.length) flags.push(`--allow-read=${spec.read.join(",")}`);
  if (spec.write.length) flags.push(`--allow-write=${spec.write.join(",")}`);
  if (spec.net.length) flags.push(`--allow-net=${spec.net.join(",")}`);
  if (spec.run) flags.push("--allow-run");
  flags.push(spec.entry);
  return flags;
}
