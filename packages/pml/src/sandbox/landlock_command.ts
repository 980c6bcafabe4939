/**
 * How a sandbox starts behind the Landlock wall (`landlock.ts`): a POSIX shell sets up the
 * descriptors (the `fds` channel, as for bubblewrap), then becomes Deno running the launcher
 * (`landlock_exec.ts`) with the plan rendered from the policy, which restricts itself and becomes
 * the sandbox's init: a shell that starts the command, waits for it, and then (as when `pml` goes,
 * on SIGTERM) kills every process left in the sandbox (`kill -KILL -1`, which Landlock's signal
 * scope, ABI 6+, limits to the sandbox's own processes). The init is the child subreaper: what a
 * command detaches (`setsid`, a double fork) stays below it, where the watchdogs count it and
 * {@link killTree} finds it.
 *
 * @module
 */
import { dirname } from "node:path";
import { PML_CODE_DIRS, sandboxEntry } from "../paths.ts";
import { landlockPlan, SCOPE } from "./landlock.ts";
import type { LaunchPlan } from "./landlock_exec.ts";
import type { OsPolicy } from "./policy.ts";

/** The launcher, run by Deno before the command (bundled in the npm package's form). */
export const LANDLOCK_LAUNCHER = sandboxEntry("landlock_exec");

/**
 * The init of a Landlock sandbox: the command in the background with the shell's stdin, the
 * shell's own copies of the protocol's descriptors closed, then a wait; `kill` (when signals are
 * scoped) ends whatever is left. Its arguments are the command.
 */
export function landlockInit(killAll: boolean): string {
  const sweep = killAll ? "kill -KILL -1 2>/dev/null" : ":";
  return [
    `trap '${sweep}; exit 143' TERM HUP INT`,
    "exec 8<&0",
    '"$@" 0<&8 8<&- &',
    "child=$!",
    "exec 8<&- 0</dev/null 1>/dev/null 3<&- 4>&-",
    'wait "$child"',
    "code=$?",
    sweep,
    'exit "$code"',
  ].join("\n");
}

/** Quotes `text` for a POSIX shell. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The program and arguments that start `command` under `policy` behind Landlock of `abi`.
 * `privateDir` (made by the caller, removed when the sandbox ends) is its only writable place
 * besides the policy's writes: its `HOME` when the policy shows none, its `TMPDIR`, its Deno cache.
 *
 * @example
 * ```ts
 * const { program, args } = landlockCommand(7, policy, "/ws", ["deno", "run", "x.ts"], {});
 * ```
 */
export function landlockCommand(
  abi: number,
  policy: OsPolicy,
  command: readonly string[],
  opts: {
    denoPath?: string;
    /** `fds`: descriptors 3 and 4 carry the protocol (see `os_sandbox.ts` `SandboxChannel`). */
    fds?: boolean;
    /** The folder of the sandbox's network proxy (TCP, its `ports` file). */
    netDir?: string;
    privateDir?: string;
    /** The Deno cache the launcher itself uses (compiled once); the command gets its own. */
    launcherDenoDir?: string;
  } = {},
): { program: string; args: string[] } {
  const deno = opts.denoPath ?? Deno.execPath();
  const landlock = landlockPlan(policy, abi, {
    extraReads: [dirname(deno), ...PML_CODE_DIRS, "/bin"],
    privateDir: opts.privateDir,
  });
  const plan: LaunchPlan = {
    landlock,
    ...(opts.netDir ? { netDir: opts.netDir } : {}),
    unix: policy.sockets.length > 0,
    tasks: policy.limits.tasks,
    fileMb: policy.limits.fileMb,
    firstClosedFd: opts.fds ? 5 : 3,
  };
  const redirects = opts.fds ? "3<&0 4>&1 0</dev/null 1>/dev/null" : "";
  const denoDir = opts.launcherDenoDir ?? Deno.env.get("DENO_DIR");
  const prefix = denoDir ? `PML_COMMAND_DENO_DIR="$DENO_DIR" DENO_DIR=${shellQuote(denoDir)} ` : "";
  return {
    program: "/bin/sh",
    args: [
      "-c",
      `${prefix}exec "$0" "$@" ${redirects}`.trimEnd(),
      deno,
      "run",
      "--allow-all",
      "--no-prompt",
      "--no-config",
      "--no-lock",
      "--quiet",
      LANDLOCK_LAUNCHER,
      JSON.stringify(plan),
      "/bin/sh",
      "-c",
      landlockInit((landlock.scoped & SCOPE.SIGNAL) !== 0),
      "pml-init",
      ...command,
    ],
  };
}
