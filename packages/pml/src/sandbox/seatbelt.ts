/**
 * The same sandbox {@link OsPolicy} rendered for macOS: a Seatbelt profile for `sandbox-exec -p`
 * (SBPL, the language of Apple's sandbox). Seatbelt has no mount namespace: it filters each file
 * operation by path, so the policy becomes rules, and for the same operation the rule written last
 * wins. Hence the order: deny everything; allow the reads, then the writes; deny the secrets (read
 * and write), then writes to the protected files. Network: no namespace either, so the proxy (`net_proxy.ts`) listens
 * on loopback TCP ports and outbound connections are allowed to those ports only.
 *
 * Not wired to run yet (no macOS machine to test it on): `detectOsSandbox` still reports none on
 * macOS, so `shell:exec` and stdio dependencies are refused there unless `unconfined`. The profile
 * is tested as text (`seatbelt_test.ts`); docs/security.md says what it would hold.
 *
 * @module
 */
import type { OsPolicy } from "./policy.ts";

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

/** The proxy's two ports on loopback (HTTP, SOCKS5), the sandbox's only network. */
export interface SeatbeltNet {
  readonly httpPort: number;
  readonly socksPort: number;
}

/** An SBPL string literal. */
function str(path: string): string {
  return `"${path.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
}

/** A path and everything below it. */
function subpath(path: string): string {
  return `(subpath ${str(path)})`;
}

/** The rule body for a list of paths, or nothing when empty. */
function rule(action: string, paths: readonly string[]): string[] {
  if (paths.length === 0) return [];
  return [`(${action}`, ...paths.map((p) => `  ${subpath(p)}`), ")"];
}

/**
 * The Seatbelt profile of `policy`. `tmp` is the sandbox's private temporary folder (macOS has no
 * private `/tmp` per sandbox: the caller creates one and points `TMPDIR` and `HOME` there when
 * the policy shows no home); `net` the proxy's ports when the policy grants hosts.
 *
 * @example
 * ```ts
 * seatbeltProfile(policy, { tmp: "/private/var/folders/x/pml-1", deno: "/opt/deno" });
 * ```
 */
export function seatbeltProfile(
  policy: OsPolicy,
  opts: { tmp: string; deno: string; net?: SeatbeltNet },
): string {
  if (policy.net.length > 0 && !opts.net) {
    throw new Error("A sandbox with network grants needs its proxy's ports");
  }
  const reads = [...new Set([...SEATBELT_SYSTEM_READS, ...policy.read, opts.deno, opts.tmp])];
  const writes = [...new Set([...policy.write, opts.tmp])];
  const lines = [
    "(version 1)",
    "(deny default)",
    // Processes of the sandbox itself: they may start programs and signal each other only.
    "(allow process-exec process-fork)",
    "(allow signal (target same-sandbox))",
    "(allow sysctl-read)",
    '(allow mach-lookup (global-name "com.apple.system.opendirectoryd.libinfo"))',
    "(allow ipc-posix-shm-read-data ipc-posix-shm-write-data)",
    // Path lookups need the metadata of every folder on the way (not the contents).
    "(allow file-read-metadata)",
    ...rule("allow file-read*", reads),
    ...rule("allow file-write*", writes),
    '(allow file-write-data (literal "/dev/null") (literal "/dev/tty"))',
    // Secrets stay hidden inside what the reads and writes show (after them: the later rule wins).
    ...rule("deny file-read* file-write*", policy.denyRead),
    // Control and protected files: read-only inside the writable folders.
    ...rule("deny file-write*", policy.denyWrite),
    // Unix sockets granted by the policy (the SSH agent), nothing else.
    ...policy.sockets.map((p) => `(allow network-outbound (literal ${str(p)}))`),
  ];
  if (opts.net) {
    // Outbound TCP only to the proxy's two ports on loopback: every other host, every other
    // loopback port, DNS and UDP stay refused (`deny default`).
    lines.push(
      `(allow network-outbound (remote tcp "localhost:${opts.net.httpPort}"))`,
      `(allow network-outbound (remote tcp "localhost:${opts.net.socksPort}"))`,
    );
  }
  return lines.join("\n") + "\n";
}

/** The `sandbox-exec` command line that runs `command` under `profile`. */
export function sandboxExecArgs(profile: string, command: readonly string[]): string[] {
  return ["/usr/bin/sandbox-exec", "-p", profile, ...command];
}
