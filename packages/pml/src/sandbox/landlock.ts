/**
 * The sandbox {@link OsPolicy} rendered for Landlock (Linux 5.13+), the wall where bubblewrap
 * cannot build its namespaces (a container's seccomp profile, user namespaces turned off) or is
 * not installed. Landlock only allows: a process restricts itself to a set of rules (a folder or
 * file and the rights beneath it) and keeps them across `execve`. So the policy's precedence (a
 * more specific path wins; for the same path a deny wins) becomes the set of what is allowed:
 *
 * - a read root that holds no secret is allowed whole; one that holds a secret is listed (its own
 *   entries stay listable) and each entry is taken the same way, so the secret is never in the set
 *   (`~` → `~/.config` → every entry of it but `gh`);
 * - the write roots likewise, with every right to make, remove and write files;
 * - TCP (ABI 4+): no bind, and connect only to the ports of the sandbox's proxy;
 * - scopes (ABI 6+): abstract unix sockets and signals reach only the sandbox's own processes.
 *
 * What Landlock cannot say is in docs/security.md ("What holds under each wall").
 *
 * The rules are computed here, in `pml`, as data ({@link landlockPlan}); `landlock_exec.ts` applies
 * them to itself through the C library (Deno FFI) and then becomes the sandbox's command.
 *
 * @module
 */
import { join } from "node:path";
import { within } from "../config/control_files.ts";
import type { OsPolicy } from "./policy.ts";

/** `landlock_*` syscall numbers (the same on x86-64 and arm64: the generic table). */
export const SYS_LANDLOCK_CREATE_RULESET = 444;
export const SYS_LANDLOCK_ADD_RULE = 445;
export const SYS_LANDLOCK_RESTRICT_SELF = 446;
/** `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)` answers the ABI. */
export const LANDLOCK_CREATE_RULESET_VERSION = 1;

/** Filesystem rights (`LANDLOCK_ACCESS_FS_*`). */
export const FS = {
  EXECUTE: 1 << 0,
  WRITE_FILE: 1 << 1,
  READ_FILE: 1 << 2,
  READ_DIR: 1 << 3,
  REMOVE_DIR: 1 << 4,
  REMOVE_FILE: 1 << 5,
  MAKE_CHAR: 1 << 6,
  MAKE_DIR: 1 << 7,
  MAKE_REG: 1 << 8,
  MAKE_SOCK: 1 << 9,
  MAKE_FIFO: 1 << 10,
  MAKE_BLOCK: 1 << 11,
  MAKE_SYM: 1 << 12,
  /** ABI 2: link or rename into another folder. */
  REFER: 1 << 13,
  /** ABI 3. */
  TRUNCATE: 1 << 14,
  /** ABI 5: `ioctl` on character and block devices. */
  IOCTL_DEV: 1 << 15,
} as const;

/** Network rights (`LANDLOCK_ACCESS_NET_*`, ABI 4). */
export const NET = { BIND_TCP: 1 << 0, CONNECT_TCP: 1 << 1 } as const;
/** Scopes (`LANDLOCK_SCOPE_*`, ABI 6). */
export const SCOPE = { ABSTRACT_UNIX_SOCKET: 1 << 0, SIGNAL: 1 << 1 } as const;

/** The rights that apply to a file (not a folder): `landlock_add_rule` refuses the others. */
const FILE_RIGHTS = FS.EXECUTE | FS.WRITE_FILE | FS.READ_FILE | FS.TRUNCATE | FS.IOCTL_DEV;

const READ = FS.EXECUTE | FS.READ_FILE | FS.READ_DIR;
const WRITE = READ | FS.WRITE_FILE | FS.REMOVE_DIR | FS.REMOVE_FILE | FS.MAKE_DIR | FS.MAKE_REG |
  FS.MAKE_SOCK | FS.MAKE_FIFO | FS.MAKE_SYM | FS.REFER | FS.TRUNCATE;

/** Every filesystem right the kernel of `abi` knows: what the ruleset handles (denies unless allowed). */
export function handledFs(abi: number): number {
  let all = (1 << 13) - 1;
  if (abi >= 2) all |= FS.REFER;
  if (abi >= 3) all |= FS.TRUNCATE;
  if (abi >= 5) all |= FS.IOCTL_DEV;
  return all;
}

/** One rule: a path and the rights beneath it (only those the ABI handles are kept). */
export interface LandlockRule {
  readonly path: string;
  readonly access: number;
}

/** What `landlock_exec.ts` applies before it becomes the command, as data. */
export interface LandlockPlan {
  readonly abi: number;
  readonly handledFs: number;
  readonly rules: readonly LandlockRule[];
  /** Handled TCP rights (ABI 4+; 0 below: TCP is then the seccomp filter's to refuse). */
  readonly handledNet: number;
  /** Scopes (ABI 6+). */
  readonly scoped: number;
}

/** Devices every program expects to open (read and write): nothing of the host's behind them. */
export const LANDLOCK_DEVICES = [
  "/dev/null",
  "/dev/zero",
  "/dev/full",
  "/dev/random",
  "/dev/urandom",
  "/dev/tty",
] as const;

/** Whether `path` is a folder (through symlinks); `undefined` when it does not exist. */
function kindOf(path: string): "dir" | "file" | undefined {
  try {
    return Deno.statSync(path).isDirectory ? "dir" : "file";
  } catch {
    return undefined;
  }
}

/**
 * `roots` minus `secrets`, as rules of `access`: a root with no secret inside is one rule; one
 * with a secret inside gets `READ_DIR` of its own and its entries are taken the same way
 * (symlinks among them are left out: what they point to is allowed only through its own root).
 * A secret that is a root itself removes it, unless a root is inside that secret (more specific).
 */
export function allowedBeneath(
  roots: readonly string[],
  secrets: readonly string[],
  access: number,
): LandlockRule[] {
  const out: LandlockRule[] = [];
  const take = (path: string, depth: number) => {
    if (secrets.includes(path)) return;
    const inside = secrets.filter((s) => s !== path && within(s, path));
    const kind = kindOf(path);
    if (!kind) return;
    if (inside.length === 0 || kind === "file" || depth > 8) {
      out.push({ path, access: kind === "file" ? access & FILE_RIGHTS : access });
      return;
    }
    out.push({ path, access: FS.READ_DIR });
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(path)];
    } catch {
      return;
    }
    for (const entry of entries) {
      if (entry.isSymlink) continue;
      take(join(path, entry.name), depth + 1);
    }
  };
  for (const root of new Set(roots)) take(root, 0);
  return out;
}

/**
 * The Landlock plan of `policy` for a kernel of `abi`: the policy's reads and writes minus its
 * secrets, plus what every sandbox needs (`extraReads`: the Deno binary's folder and PML's code;
 * `privateDir`: its private home, temp folder and Deno cache; the devices; `/proc`, whose other
 * processes' files Landlock keeps out of reach by its ptrace rule).
 *
 * @example
 * ```ts
 * landlockPlan(policy, 7, { extraReads: ["/opt/deno"], privateDir: "/tmp/pml-ll-1" });
 * ```
 */
export function landlockPlan(
  policy: OsPolicy,
  abi: number,
  opts: { extraReads?: readonly string[]; privateDir?: string } = {},
): LandlockPlan {
  const handled = handledFs(abi);
  const secrets = policy.denyRead;
  const rules = [
    ...allowedBeneath([...policy.read, ...(opts.extraReads ?? [])], secrets, READ),
    ...allowedBeneath(
      [...policy.write, ...(opts.privateDir ? [opts.privateDir] : [])],
      secrets,
      WRITE,
    ),
    // A socket is connected to through its file (the seccomp filter lets `AF_UNIX` through then).
    ...policy.sockets.map((path) => ({ path, access: FS.READ_FILE | FS.WRITE_FILE })),
    ...LANDLOCK_DEVICES.filter((d) => kindOf(d)).map((path) => ({
      path,
      access: FS.READ_FILE | FS.WRITE_FILE | FS.IOCTL_DEV,
    })),
    { path: "/dev", access: FS.READ_DIR },
    { path: "/proc", access: FS.READ_FILE | FS.READ_DIR },
  ].map((r) => ({ path: r.path, access: r.access & handled })).filter((r) => r.access !== 0);
  return {
    abi,
    handledFs: handled,
    rules,
    handledNet: abi >= 4 ? NET.BIND_TCP | NET.CONNECT_TCP : 0,
    scoped: abi >= 6 ? SCOPE.ABSTRACT_UNIX_SOCKET | SCOPE.SIGNAL : 0,
  };
}

let probed: number | undefined;

/**
 * The Landlock ABI of this kernel (0: none, or refused, as by a seccomp profile), asked once per
 * process through the C library at `libc`.
 */
export function landlockAbi(libc: string | undefined): number {
  if (probed !== undefined) return probed;
  probed = 0;
  if (!libc || Deno.build.os !== "linux") return probed;
  try {
    const lib = Deno.dlopen(libc, {
      syscall: { parameters: ["i64", "i64", "i64", "i64"], result: "i64" },
    });
    const abi = Number(
      lib.symbols.syscall(BigInt(SYS_LANDLOCK_CREATE_RULESET), 0n, 0n, 1n),
    );
    lib.close();
    probed = abi > 0 ? abi : 0;
  } catch { /* no FFI */ }
  return probed;
}
