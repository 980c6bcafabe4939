/**
 * The same sandbox {@link OsPolicy} rendered for macOS: a Seatbelt profile for `sandbox-exec -p`
 * (SBPL, the language of Apple's sandbox). Seatbelt has no mount namespace: it filters each file
 * operation by path, so the policy becomes rules, and for the same operation the rule written last
 * wins. Hence the order: deny everything; allow the reads, then the writes; deny the secrets (read
 * and write), then writes to the protected files, then moves of the folders that hold either
 * inside a writable folder. Seatbelt matches the real path of a file (`/private/var/…` for
 * `/var/…`): each path is written as given and, when a symlink leads elsewhere, as its real path.
 * Network: no namespace either, so the proxy (`net_proxy.ts`) listens on loopback TCP ports and
 * outbound connections are allowed to those ports only; the ports are the profile's parameters
 * (`sandbox-exec -D`), known once the proxy listens.
 *
 * Used on macOS behind the self-test of `seatbelt_canary.ts`: the wall is used only once a canary
 * run of a profile on this machine has shown that it holds. `seatbelt_crosscheck_test.ts` compares
 * what it allows with what sandbox-runtime's profile allows for the same policy; docs/security.md
 * ("Seatbelt") says what holds and what does not.
 *
 * @module
 */
import { dirname } from "node:path";
import { PML_CODE_DIRS } from "../paths.ts";
import type { OsPolicy } from "./policy.ts";
import { guardedPaths, within } from "../config/control_files.ts";

/** What macOS itself needs readable for any program to start (dyld, frameworks, locale). */
export const SEATBELT_SYSTEM_READS = [
  "/System",
  "/usr",
  "/bin",
  "/sbin",
  "/Library/Apple",
  "/Library/Preferences",
  "/private/etc",
  "/private/var/db/dyld",
  "/private/var/db/timezone",
  "/dev",
] as const;

/**
 * What a sandbox may read of the kernel's settings (a name, or a prefix ending in `.`): what
 * `uname`, `sysconf`, the C library, V8 and language runtimes ask at start.
 */
export const SYSCTL_READS = [
  "hw.",
  "machdep.cpu.",
  "machdep.ptrauth_enabled",
  "kern.ostype",
  "kern.osrelease",
  "kern.osversion",
  "kern.osproductversion",
  "kern.osvariant_status",
  "kern.version",
  "kern.hostname",
  "kern.argmax",
  "kern.maxfiles",
  "kern.maxfilesperproc",
  "kern.maxproc",
  "kern.ngroups",
  "kern.usrstack64",
  "kern.secure_kernel",
  "kern.tcsm_available",
  "kern.tcsm_enable",
  "kern.willshutdown",
  "sysctl.proc_cputype",
  "vm.loadavg",
  "security.mac.lockdown_mode_state",
] as const;

/** A sysctl filter: a whole name, or a prefix when it ends with `.`. */
const sysctl = (name: string) =>
  name.endsWith(".") ? `(sysctl-name-prefix ${str(name)})` : `(sysctl-name ${str(name)})`;

/** The profile's parameters holding the proxy's two loopback ports (HTTP, SOCKS5). */
export const PROXY_PORT_PARAMS = ["PML_PROXY_HTTP_PORT", "PML_PROXY_SOCKS_PORT"] as const;

/** What {@link seatbeltProfile} needs besides the policy. */
export interface SeatbeltOptions {
  /**
   * The sandbox's private temporary folder (macOS has no private `/tmp` per sandbox: the caller
   * creates one and points `TMPDIR`, and `HOME` when the policy shows none, there).
   */
  readonly tmp: string;
  /** The Deno binary (its folder is read-only, as PML's own code is). */
  readonly deno: string;
}

/** An SBPL string literal. */
function str(path: string): string {
  return `"${path.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}

/** The real path of `path` when a symlink on the way leads elsewhere. */
function realOf(path: string): string | undefined {
  try {
    const real = Deno.realPathSync(path);
    return real === path ? undefined : real;
  } catch {
    return undefined;
  }
}

/** Each path as given and as its real path, without repeats, in order. */
function bothSpellings(paths: readonly string[]): string[] {
  const out = new Set<string>();
  for (const path of paths) {
    out.add(path);
    const real = realOf(path);
    if (real) out.add(real);
  }
  return [...out];
}

/** The rule body for a list of filters, or nothing when empty. */
function rule(action: string, filters: readonly string[]): string[] {
  if (filters.length === 0) return [];
  return [`(${action}`, ...filters.map((f) => `  ${f}`), ")"];
}

/** A path and everything below it. */
const subpaths = (paths: readonly string[]) => paths.map((p) => `(subpath ${str(p)})`);

/**
 * The folders between a writable root and each of `paths` (the root included): a rename of one
 * would carry a secret or a protected file to a name no rule covers, and back once changed
 * (the bubblewrap wall binds such a folder onto itself for the same reason).
 */
function foldersToPin(paths: readonly string[], writes: readonly string[]): string[] {
  const out = new Set<string>();
  for (const path of paths) {
    const root = writes.find((w) => within(path, w) && path !== w);
    if (!root) continue;
    for (let dir = dirname(path); within(dir, root); dir = dirname(dir)) {
      out.add(dir);
      if (dir === root) break;
    }
  }
  return [...out].sort();
}

/**
 * The Seatbelt profile of `policy` (see {@link SeatbeltOptions}).
 *
 * @example
 * ```ts
 * seatbeltProfile(policy, { tmp: "/private/var/folders/x/pml-1", deno: "/opt/deno" });
 * ```
 */
export function seatbeltProfile(policy: OsPolicy, opts: SeatbeltOptions): string {
  const writes = bothSpellings([...policy.write, opts.tmp]);
  // What a sandbox writes it reads too (bubblewrap binds it read-write).
  const reads = bothSpellings([
    ...SEATBELT_SYSTEM_READS,
    ...policy.read,
    dirname(opts.deno),
    ...PML_CODE_DIRS,
    ...writes,
  ]);
  const secrets = bothSpellings(policy.denyRead);
  // Every guarded path of the writable folders, existing or not: the policy's `denyWrite` holds
  // only those that exist (a bind needs a source); a rule names a path that is not there yet just as
  // well, so a protected file cannot be created either.
  const guarded = bothSpellings([...policy.denyWrite, ...guardedPaths(policy.write)]);
  const lines = [
    "(version 1)",
    "(deny default)",
    // Processes of the sandbox itself: they may start programs and signal each other only.
    "(allow process-exec process-fork)",
    "(allow signal (target same-sandbox))",
    // The machine's shape (CPUs, memory, OS release), not other processes: `kern.procargs2` would
    // give any process of the user's arguments and environment, `pml`'s API keys included.
    ...rule("allow sysctl-read", SYSCTL_READS.map(sysctl)),
    '(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))',
    "(allow ipc-posix-shm-read-data ipc-posix-shm-write-data)",
    // Path lookups need the metadata of every folder on the way (not the contents).
    "(allow file-read-metadata)",
    ...rule("allow file-read*", subpaths(reads)),
    ...rule("allow file-write*", subpaths(writes)),
    // Not `/dev/tty`: the user's terminal is no sandbox's (bubblewrap's `--new-session` too).
    '(allow file-write-data (literal "/dev/null"))',
    // Secrets stay hidden inside what the reads and writes show (after them: the later rule wins).
    ...rule("deny file-read* file-write*", subpaths(secrets)),
    // Control and protected files: read-only inside the writable folders, and not created.
    ...rule("deny file-write*", subpaths(guarded)),
    // Their folders cannot be renamed away (and back): files inside them stay writable.
    ...rule(
      "deny file-write-unlink",
      foldersToPin([...secrets, ...guarded], writes).map((d) => `(literal ${str(d)})`),
    ),
  ];
  // Unix sockets granted by the policy (the SSH agent), nothing else: creating one is
  // `system-socket`, connecting to it `network-outbound` on its path.
  if (policy.sockets.length > 0) lines.push("(allow system-socket (socket-domain AF_UNIX))");
  for (const p of bothSpellings(policy.sockets)) {
    lines.push(`(allow network-outbound (literal ${str(p)}))`);
  }
  if (policy.net.length > 0) {
    // Outbound TCP only to the proxy's two ports on loopback: every other host, every other
    // loopback port, DNS and UDP stay refused (`deny default`).
    for (const param of PROXY_PORT_PARAMS) {
      lines.push(
        `(allow network-outbound (remote tcp (string-append "localhost:" (param "${param}"))))`,
      );
    }
  }
  return lines.join("\n") + "\n";
}

/** Where macOS keeps `sandbox-exec`. */
export const SANDBOX_EXEC = "/usr/bin/sandbox-exec";

/**
 * The `sandbox-exec` command line that runs `command` under `profile`, with the proxy's ports
 * (HTTP, SOCKS5) when the policy grants hosts.
 */
export function sandboxExecArgs(
  profile: string,
  command: readonly string[],
  proxyPorts?: readonly [number, number],
): string[] {
  const params = proxyPorts
    ? PROXY_PORT_PARAMS.flatMap((name, i) => ["-D", `${name}=${proxyPorts[i]}`])
    : [];
  return [SANDBOX_EXEC, ...params, "-p", profile, ...command];
}
