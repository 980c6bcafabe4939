/**
 * The sandbox policy (DESIGN §13 "Sandbox model"): one plain-data value per sandbox that says what
 * it may read, what it may write, what stays hidden or read-only inside those, its network and its
 * identity. It is what `pml status` prints and what the attack tests assert against; each platform
 * only renders it (`os_sandbox.ts`: bubblewrap arguments on Linux).
 *
 * Two views of the machine:
 * - **toolbox** (`shell:exec`, raw declared commands, npm dependencies: programs): the system
 *   folders, `HOME` and the folders on `PATH`, read-only, minus the secrets (`host_view.ts`);
 * - **narrow** (the std read and write tools, `pml:execute`, registry modules: Deno code that needs
 *   no toolbox): Deno's shared libraries and the sandbox's own grants, nothing else.
 *
 * Rule of precedence, the same on every platform: a more specific path wins over a less specific
 * one; for the same path, a deny wins over a grant. So a write grant of the workspace keeps its
 * `.git/config` read-only, and an explicit read grant inside a secret folder (a human's choice in
 * `.pml.json`) is visible.
 *
 * @module
 */
import { realPathOf } from "../exists.ts";
import { isAbsolute, join } from "node:path";
import { within } from "../config/control_files.ts";
import { DENO_LIMITS, PROGRAM_LIMITS, type SandboxLimits } from "./limits.ts";
import { existing, hostView, type SandboxView } from "./host_view.ts";

/** What one sandbox may do, as data. */
export interface OsPolicy {
  /** Bound read-only: the view (system, toolbox) and the read grants. */
  readonly read: readonly string[];
  /** Bound read-write: the workspace and write grants, when the sandbox writes. */
  readonly write: readonly string[];
  /** Hidden (an empty, read-only folder or file in their place): secrets. */
  readonly denyRead: readonly string[];
  /**
   * Read-only over the writes (PML's control files and the files the host runs later). Those that
   * do not exist when the sandbox starts cannot be bound: the std target watches them instead.
   */
  readonly denyWrite: readonly string[];
  /**
   * Hosts (`host` or `host:port`) reachable through the host-side proxy (`net_proxy.ts`); none
   * when empty. The sandbox never shares the host's network: its namespace has only loopback.
   */
  readonly net: readonly string[];
  /**
   * The uid and gid inside. Never 0: when `pml` runs as root, the sandbox shows an unprivileged
   * uid; that uid still maps to host root for the kernel's owner checks (docs/security.md
   * "Identity" says what holds then).
   */
  readonly identity: { readonly uid: number; readonly gid: number };
  /**
   * Unix sockets the sandbox may connect to (the SSH agent when `.pml.json` grants it); any other
   * new unix socket is refused by a seccomp filter. Empty: no `socket(AF_UNIX)` at all.
   */
  readonly sockets: readonly string[];
  /** Processes, `/tmp` and `/dev/shm` sizes, file size, memory (`limits.ts`). */
  readonly limits: SandboxLimits;
  /**
   * Which entries `denyRead` and `denyWrite` named when the policy was made (`entryIdentity` of
   * each, in order; of the secrets only those inside `read` or `write`, the ones bound). A running
   * sandbox's mount over a secret or a guarded file comes off when the host removes that entry, so
   * one created again in its place (`rm -rf ~/.aws` then `aws configure`; `~/.claude.json` or
   * `.git/config` saved by a rename) would be readable or writable there: the new entry changes
   * the policy, and the pool replaces that sandbox.
   */
  readonly entries?: string;
  /**
   * The names in each folder of the view that holds a secret (`~`, `~/.config`, `/etc`), as a
   * short digest. Landlock allows only, so it lists those folders entry by entry at the sandbox's
   * start: an entry made there later (a new `~/notes.txt`) is outside its set. A change of these
   * names is a new policy for a Landlock sandbox (the pool replaces it), not for the other walls,
   * which see such an entry at once (`pool.ts`).
   */
  readonly listing?: string;
}

/**
 * PML's own home (`~/.pml`, or `PML_HOME`): its credentials, the trust store, the human-only text
 * of pending approvals, and whatever it keeps there later. Hidden under every grant, unlike the
 * other secrets (an explicit grant inside one shows it): a grant inside it is dropped from the
 * policy, and so is a write-protection (a control file of a grant of `HOME`: `~/.pml` is one) that
 * would bind it back, read-only but readable, over its hiding place. Only PML's own caches of public
 * code under it ({@link PML_HOME_CACHES}) can be granted for reading, by PML itself.
 */
export function pmlHomes(env: { readonly HOME?: string; readonly PML_HOME?: string }): string[] {
  const homes = env.HOME && isAbsolute(env.HOME) ? [join(env.HOME, ".pml")] : [];
  if (env.PML_HOME && isAbsolute(env.PML_HOME)) homes.push(env.PML_HOME);
  return [...new Set(homes.flatMap((home) => [home, realPathOf(home) ?? home]))];
}

/**
 * Folders of PML's home that hold public code only, which PML grants its registry modules for
 * reading: Deno's cache (their pinned imports) and the registry's modules and run folders.
 */
export const PML_HOME_CACHES: readonly string[] = ["deno", "registry"];

/** The uid and gid a sandbox runs as: the user's own, or 65534 ("nobody") instead of root. */
export function sandboxIdentity(
  uid = Deno.uid() ?? 65534,
  gid = Deno.gid() ?? 65534,
): OsPolicy["identity"] {
  return uid === 0 ? { uid: 65534, gid: 65534 } : { uid, gid };
}

/** What a sandbox is for, from which {@link sandboxPolicy} builds its policy. */
export interface PolicyInput {
  /** `toolbox` for programs, `narrow` for Deno code (see the module's doc). */
  readonly view: SandboxView;
  /**
   * The user's `HOME` and `PATH` (the toolbox, and where the secrets are), and `PML_HOME` when PML's
   * home is not `~/.pml`.
   */
  readonly env: { readonly HOME?: string; readonly PATH?: string; readonly PML_HOME?: string };
  readonly read?: readonly string[];
  readonly write?: readonly string[];
  /** Secrets besides the built-in ones (`.pml.json` `sandbox.deny`). */
  readonly deny?: readonly string[];
  /** Control and protected files (`guardedPaths` of the write roots). */
  readonly denyWrite?: readonly string[];
  /** Granted hosts (`host` or `host:port`), reached through the proxy. */
  readonly net?: readonly string[];
  readonly sockets?: readonly string[];
  /** By default {@link PROGRAM_LIMITS} for the toolbox, {@link DENO_LIMITS} for the narrow view. */
  readonly limits?: SandboxLimits;
}

/**
 * The policy of one sandbox.
 *
 * @example
 * ```ts
 * sandboxPolicy({ view: "toolbox", env: { HOME: "/home/a", PATH: "/usr/bin" }, write: ["/w"] });
 * ```
 */
export function sandboxPolicy(input: PolicyInput): OsPolicy {
  const { HOME, PATH, PML_HOME } = input.env;
  const look = hostView(
    JSON.stringify([input.view, HOME ?? null, PATH ?? null, input.deny ?? [], PML_HOME ?? null]),
  );
  // PML's home stays hidden under every grant (see `pmlHomes`).
  const homes = pmlHomes(input.env);
  const inHome = (path: string) => homes.some((home) => within(path, home));
  const shownCache = (path: string) =>
    homes.some((home) => PML_HOME_CACHES.some((cache) => within(path, join(home, cache))));
  // Only what exists can be bound: a secret or a guarded file that appears later changes the
  // policy, and the pool then replaces the warm sandbox that did not hide it (for secrets, from the
  // next look at the machine: see `HOST_VIEW_REUSE_MS`, `host_view.ts`).
  const read = [...new Set([...look.view, ...(input.read ?? [])])]
    .filter((path) => !inHome(path) || shownCache(path));
  const write = [...new Set(input.write ?? [])].filter((path) => !inHome(path));
  const guarded = existing(
    [...new Set(input.denyWrite ?? [])].filter((path) => !hiddenUnder(path, look.denyRead, write)),
  );
  return {
    read,
    write,
    denyRead: look.denyRead,
    denyWrite: guarded.map(([path]) => path),
    net: [...new Set(input.net ?? [])],
    identity: sandboxIdentity(),
    sockets: [...(input.sockets ?? [])],
    limits: input.limits ?? (input.view === "toolbox" ? PROGRAM_LIMITS : DENO_LIMITS),
    entries: [look.shownIn(read, write), ...guarded.map(([, id]) => id)].join(" "),
    ...(look.listing !== undefined ? { listing: look.listing } : {}),
  };
}

/**
 * True when the deepest of `hidden` and `writes` holding `path` is a hidden one: it is read-only
 * there already, and a read-only bind of it would show it again (a write grant of `HOME` made its
 * control file `~/.pml` one, bound over the hidden `~/.pml`).
 */
function hiddenUnder(path: string, hidden: readonly string[], writes: readonly string[]): boolean {
  const deepest = (roots: readonly string[]) =>
    Math.max(-1, ...roots.filter((root) => within(path, root)).map((root) => root.length));
  const hide = deepest(hidden);
  return hide >= 0 && hide >= deepest(writes);
}
