/**
 * The operating-system wall around local execution (DESIGN §12 "Two walls", §13 "Sandbox model"):
 * on Linux, bubblewrap (`bwrap`) renders a sandbox {@link OsPolicy} (`policy.ts`) into its own
 * mount, pid, network, IPC, UTS and user namespaces. The mount namespace holds the policy's reads
 * read-only and its writes read-write, its secrets hidden and its protected files read-only over
 * them (a more specific path wins; for the same path a deny wins); `/tmp` is private and empty;
 * `/proc` shows only the sandbox's processes, with `/proc/sys` and the kernel's other writable
 * files read-only. The network namespace holds only loopback; granted hosts are reached through a
 * proxy outside (`net_proxy.ts`, `net_bridge.ts`). Deno's permission flags stay the second wall
 * inside.
 *
 * On macOS the same policy renders to a Seatbelt profile run by `sandbox-exec` (`seatbelt.ts`),
 * used only once its self-test has passed on the machine (`seatbelt_canary.ts`); behind Landlock,
 * PML's launcher applies it (`landlock_command.ts`). Which of these walls the machine has is found
 * by `detect_os_sandbox.ts`.
 *
 * @module
 */
import { exists, realPathOf } from "../exists.ts";
import { PML_CODE_DIRS } from "../paths.ts";
import { dirname, join, relative } from "node:path";
import type { OsPolicy } from "./policy.ts";
import { within } from "../config/control_files.ts";
import { PmlError } from "../errors.ts";
import { bridged, proxyEnvOnPortsShell, SANDBOX_NET_DIR } from "./net_bridge.ts";
import { tmpfsArgs, withRlimits } from "./limits.ts";
import { landlockCommand } from "./landlock_command.ts";
import { SANDBOX_EXEC, sandboxExecArgs, seatbeltProfile } from "./seatbelt.ts";
import type { OsWall } from "./detect_os_sandbox.ts";

export type { OsPolicy } from "./policy.ts";

/** Inside the sandbox: an empty, private home (when the policy shows none) and temp folder. */
export const SANDBOX_HOME = "/tmp/home";
/**
 * Where the caches of programs go inside the sandbox (`shell:exec`'s package managers): its private
 * `/tmp`; behind Landlock and Seatbelt, the same path under the sandbox's private folder.
 */
export const SANDBOX_CACHE_HOME = "/tmp/.cache";
/** Deno's cache inside the sandbox: private, so no sandbox can poison another's. */
export const SANDBOX_DENO_DIR = "/tmp/deno";

/**
 * Kernel files of `/proc` a process may write when its uid is host root (even without any
 * capability: `kernel.core_pattern` is checked against the uid alone): read-only in every sandbox.
 */
const PROC_READ_ONLY = ["/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"];
/** Kernel files of `/proc` that only tell about the host: emptied. */
const PROC_MASKED = ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug"];

/** One mount of the rendered policy, before ordering. */
interface Mount {
  path: string;
  /** In order of precedence for the same path: the last one wins. */
  readonly kind: "read" | "write" | "hide" | "lock";
}
const PRECEDENCE: Record<Mount["kind"], number> = { read: 0, write: 1, hide: 2, lock: 3 };

function depth(path: string): number {
  return path.split("/").filter(Boolean).length;
}

/** Whether `path` is a folder (through symlinks), `undefined` when it does not exist. */
function isDir(path: string): boolean | undefined {
  try {
    return Deno.statSync(path).isDirectory;
  } catch {
    return undefined;
  }
}

/**
 * Where the mount of `path` goes in the sandbox: `path` itself, unless a symlink on the way to it
 * lies inside another folder the sandbox shows (`roots`): a project's linked `node_modules` under
 * the home, a secret folder that links into a dotfiles folder (`~/.aws` → `~/dotfiles/aws`).
 * bubblewrap cannot mount there (it follows the link outside the new root: "Can't bind mount …:
 * No such file or directory", and no sandbox started), and the link, which the sandbox shows,
 * leads to the real path anyway: the mount goes there. Its source is the same either way (a bind
 * follows links), so the sandbox sees the same files; a hidden secret is then hidden where its
 * files really are.
 */
function mountPoint(path: string, roots: readonly string[]): string {
  // The outermost folder shown around it: a link anywhere below it is a link in the sandbox.
  const outer = roots.filter((root) => root !== path && within(path, root))
    .sort((a, b) => a.length - b.length)[0];
  if (outer === undefined) return path;
  const real = realPathOf(path);
  const realOuter = realPathOf(outer);
  if (real === undefined || realOuter === undefined) return path;
  return real === join(realOuter, relative(outer, path)) ? path : real;
}

/**
 * The `bwrap` arguments that run `command` under `policy` (`cwd` must be inside a bind). The Deno
 * binary's folder and PML's own code are added read-only.
 *
 * @example
 * ```ts
 * bwrapArgs({ ...policy, read: ["/usr", "/ws"] }, "/ws", ["deno", "run", "x.ts"]);
 * ```
 */
export function bwrapArgs(
  policy: OsPolicy,
  cwd: string,
  command: readonly string[],
  denoPath = Deno.execPath(),
  /** The folder of the sandbox's proxy (`net_proxy.ts`): required when the policy grants hosts. */
  netDir?: string,
): string[] {
  if (policy.net.length > 0 && !netDir) {
    throw new PmlError("SANDBOX_SPEC", "A sandbox with network grants needs its proxy's folder");
  }
  const args = [
    "--unshare-all",
    "--unshare-user",
    "--uid",
    String(policy.identity.uid),
    "--gid",
    String(policy.identity.gid),
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--proc",
    "/proc",
  ];
  for (const path of PROC_READ_ONLY) args.push("--ro-bind-try", path, path);
  for (const path of PROC_MASKED) if (exists(path)) args.push("--ro-bind", "/dev/null", path);
  // Sized tmpfs mounts: a write past the size fails (ENOSPC) instead of filling the host's memory.
  args.push("--dev", "/dev", ...tmpfsArgs(policy.limits, "/dev/shm"));
  args.push(...tmpfsArgs(policy.limits, "/tmp"), "--dir", SANDBOX_HOME, "--dir", SANDBOX_DENO_DIR);
  // The bridge to the proxy is a shell script (`sh`, `socat`, `grep`: under /usr, or /bin).
  const bridge = netDir && exists("/bin") ? ["/bin"] : [];
  const reads = [...policy.read, dirname(denoPath), ...PML_CODE_DIRS, ...bridge];
  const visible = [...reads, ...policy.write];
  const mounts: Mount[] = [
    ...reads.map((path) => ({ path, kind: "read" as const })),
    ...policy.write.map((path) => ({ path, kind: "write" as const })),
    // A socket is connected to through its file: bound where it is, writable.
    ...policy.sockets.map((path) => ({ path, kind: "write" as const })),
    // Secrets only where something shows them, and only those that exist (a bind needs a source).
    ...policy.denyRead.filter((p) => visible.some((root) => within(p, root)) && exists(p))
      .map((path) => ({ path, kind: "hide" as const })),
  ];
  // A hidden entry is not bound again read-only (PML's home holds the trust store and the sign-in
  // tokens: with HOME granted for writes, its lock re-exposed it).
  const hidden = mounts.filter((m) => m.kind === "hide").map((m) => m.path);
  const locked = policy.denyWrite.filter((p) =>
    policy.write.some((root) => within(p, root)) && exists(p) &&
    !hidden.some((h) => within(p, h))
  );
  // The folder of a protected file (`.git` of `.git/config`) is bound onto itself: a mount point
  // cannot be renamed or removed, so the file cannot be moved away with its folder and replaced.
  // Its other files stay writable.
  for (const dir of new Set(locked.map((path) => dirname(path)))) {
    if (!policy.write.includes(dir) && policy.write.some((root) => within(dir, root))) {
      mounts.push({ path: dir, kind: "write" });
    }
  }
  mounts.push(...locked.map((path) => ({ path, kind: "lock" as const })));
  for (const mount of mounts) mount.path = mountPoint(mount.path, visible);
  mounts.sort((a, b) => depth(a.path) - depth(b.path) || PRECEDENCE[a.kind] - PRECEDENCE[b.kind]);
  const seen = new Set<string>();
  const remount: string[] = [];
  for (const { path, kind } of mounts) {
    const key = `${kind} ${path}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (kind === "read") args.push("--ro-bind-try", path, path);
    else if (kind === "write") args.push("--bind-try", path, path);
    else if (kind === "lock") args.push("--ro-bind", path, path);
    else if (isDir(path)) {
      // An empty folder, made read-only once everything inside it is mounted.
      args.push("--tmpfs", path);
      remount.push(path);
    } else args.push("--ro-bind", "/dev/null", path);
  }
  for (const path of remount) args.push("--remount-ro", path);
  if (netDir) args.push("--ro-bind", netDir, SANDBOX_NET_DIR);
  const run = netDir ? bridged(command) : command;
  args.push("--chdir", cwd, "--", ...withRlimits(policy.limits, run));
  return args;
}

/** How the sandbox's first process talks to `pml`. */
export type SandboxChannel =
  /** Its stdin and stdout, as given (a stdio MCP server, a Deno sandbox that runs no program). */
  | "stdio"
  /**
   * Descriptors 3 (from `pml`) and 4 (to `pml`), its stdin and stdout being `/dev/null`: bubblewrap's
   * init process, which every process of the sandbox can reach through `/proc/1/fd`, then holds
   * none of the protocol's pipes, and the runner makes itself unreachable (`_runner.ts`).
   */
  | "fds";

/** Descriptors of {@link SandboxChannel} `fds`, and the seccomp program's. */
export const CHANNEL_IN_FD = 3;
export const CHANNEL_OUT_FD = 4;
const SECCOMP_FD = 5;

/** Quotes `text` for a POSIX shell. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * Whether the policy lets processes open unix sockets: to the sockets it grants (the SSH agent),
 * or to the network proxy's when it grants hosts. Otherwise the seccomp filter refuses them.
 */
export function unixSocketsAllowed(policy: OsPolicy): boolean {
  return policy.sockets.length > 0 || policy.net.length > 0;
}

/**
 * The program and arguments that start `command` under `policy` in bubblewrap: a POSIX shell that
 * sets up the descriptors (the channel, the seccomp program) and replaces itself with `bwrap`.
 *
 * @example
 * ```ts
 * const { program, args } = osCommand("/usr/bin/bwrap", policy, "/ws", ["deno", "run", "x.ts"]);
 * new Deno.Command(program, { args, stdin: "piped", stdout: "piped" });
 * ```
 */
export function osCommand(
  bwrap: string,
  policy: OsPolicy,
  cwd: string,
  command: readonly string[],
  opts: {
    denoPath?: string;
    channel?: SandboxChannel;
    /** The seccomp program's file (`seccomp.ts`). */
    seccomp?: string;
    /** The folder of the sandbox's network proxy (see {@link bwrapArgs}). */
    netDir?: string;
  } = {},
): { program: string; args: string[] } {
  const filter = unixSocketsAllowed(policy) ? undefined : opts.seccomp;
  const redirects = [
    ...(opts.channel === "fds"
      ? [`${CHANNEL_IN_FD}<&0`, `${CHANNEL_OUT_FD}>&1`, "0</dev/null", "1>/dev/null"]
      : []),
    ...(filter ? [`${SECCOMP_FD}<${shellQuote(filter)}`] : []),
  ];
  const bwrapArgv = bwrapArgs(policy, cwd, command, opts.denoPath, opts.netDir);
  const args = filter ? ["--seccomp", String(SECCOMP_FD), ...bwrapArgv] : bwrapArgv;
  return {
    program: "/bin/sh",
    args: ["-c", `exec "$0" "$@" ${redirects.join(" ")}`.trimEnd(), bwrap, ...args],
  };
}

/**
 * The program and arguments that start `command` under `policy` behind `wall`: bubblewrap
 * ({@link osCommand}), Seatbelt ({@link seatbeltCommand}) or Landlock (`landlock_command.ts`).
 * `privateDir` is the Landlock or Seatbelt sandbox's writable home and temp folder (bubblewrap
 * gives a private `/tmp` instead); `proxyPorts` the proxy's loopback ports when it listens already.
 */
export function wallCommand(
  wall: OsWall,
  policy: OsPolicy,
  cwd: string,
  command: readonly string[],
  opts: Parameters<typeof osCommand>[4] & {
    privateDir?: string;
    proxyPorts?: readonly [number, number];
  } = {},
): { program: string; args: string[] } {
  if ("bwrap" in wall) return osCommand(wall.bwrap, policy, cwd, command, opts);
  if ("seatbelt" in wall) return seatbeltCommand(policy, command, opts);
  return landlockCommand(wall.landlock, policy, command, {
    denoPath: opts.denoPath,
    fds: opts.channel === "fds",
    netDir: opts.netDir,
    privateDir: opts.privateDir,
  });
}

/**
 * `command` under Seatbelt (`sandbox-exec`; the channel is stdio there, and the seccomp program has
 * no use). With network grants, the proxy's ports are the profile's parameters: `proxyPorts` when
 * the proxy already listens, else read from `<netDir>/ports` at start (a stdio dependency's proxy
 * starts with it), the proxy variables pointed there too.
 */
function seatbeltCommand(
  policy: OsPolicy,
  command: readonly string[],
  opts: {
    denoPath?: string;
    netDir?: string;
    privateDir?: string;
    proxyPorts?: readonly [number, number];
  },
): { program: string; args: string[] } {
  if (!opts.privateDir) {
    throw new PmlError("SANDBOX_SPEC", "A Seatbelt sandbox needs its private folder");
  }
  const profile = seatbeltProfile(policy, {
    tmp: opts.privateDir,
    deno: opts.denoPath ?? Deno.execPath(),
  });
  if (policy.net.length > 0 && !opts.proxyPorts) {
    if (!opts.netDir) {
      throw new PmlError("SANDBOX_SPEC", "A sandbox with network grants needs its proxy");
    }
    const params = `-D "PML_PROXY_HTTP_PORT=$h" -D "PML_PROXY_SOCKS_PORT=$s"`;
    return {
      program: "/bin/sh",
      args: [
        "-c",
        `read h s < "$0/ports" && ${proxyEnvOnPortsShell()} && ` +
        `exec ${SANDBOX_EXEC} ${params} "$@"`,
        opts.netDir,
        "-p",
        profile,
        ...command,
      ],
    };
  }
  const [program, ...args] = sandboxExecArgs(profile, command, opts.proxyPorts);
  return { program, args };
}
