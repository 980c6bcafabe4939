/**
 * The sandbox policy (DESIGN §13 "Sandbox model"): one plain-data value per sandbox that says what
 * it may read, what it may write, what stays hidden or read-only inside those, its network and its
 * identity. It is what `pml status` prints and what the attack tests assert against; each platform
 * only renders it (`os_sandbox.ts`: bubblewrap arguments on Linux).
 *
 * Two views of the machine:
 * - **toolbox** (`shell:exec`, raw declared commands, npm dependencies: programs): the system
 *   folders, `HOME` and the folders on `PATH`, read-only, minus {@link secretPaths};
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
import { entryIdentity, exists, realPathOf } from "../exists.ts";
import { dirname, isAbsolute, join } from "node:path";
import { within } from "../config/control_files.ts";
import { DENO_LIMITS, PROGRAM_LIMITS, type SandboxLimits } from "./limits.ts";

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

/** System folders of the toolbox view (those that exist): programs, libraries, configuration. */
export const SYSTEM_TOOLBOX = [
  "/usr",
  "/bin",
  "/sbin",
  "/lib",
  "/lib64",
  "/lib32",
  "/libx32",
  "/etc",
  "/opt",
  "/nix",
  "/snap",
] as const;

/** What Deno itself needs of the system: its shared libraries. */
export const SYSTEM_LIBS = ["/usr", "/lib", "/lib64", "/lib32"] as const;

/**
 * Secrets under `HOME`, hidden from every sandbox whatever else it sees: keys, cloud and registry
 * credentials, keyrings, browser profiles, PML's own folder (credentials, trust store, caches) and
 * the agents' credentials. `.pml.json` `sandbox.deny` adds to it.
 */
export const HOME_SECRETS: readonly string[] = [
  ".ssh",
  ".aws",
  ".azure",
  ".kube",
  ".gnupg",
  ".docker/config.json",
  ".npmrc",
  ".yarnrc.yml",
  ".pypirc",
  ".netrc",
  ".git-credentials",
  ".config/git/credentials",
  ".config/gcloud",
  ".config/gh",
  ".config/hub",
  ".cargo/credentials",
  ".cargo/credentials.toml",
  ".gem/credentials",
  ".terraform.d/credentials.tfrc.json",
  ".vault-token",
  ".password-store",
  ".pml",
  ".claude/.credentials.json",
  ".claude.json",
  ".codex/auth.json",
  ".gemini/oauth_creds.json",
  ".mozilla",
  ".config/google-chrome",
  ".config/chromium",
  ".config/BraveSoftware",
  ".config/microsoft-edge",
  ".local/share/keyrings",
  ".config/op",
  ".bash_history",
  ".zsh_history",
];

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

/** Secrets of the system: password hashes and who may become root. */
export const SYSTEM_SECRETS: readonly string[] = [
  "/etc/shadow",
  "/etc/shadow-",
  "/etc/gshadow",
  "/etc/gshadow-",
  "/etc/sudoers",
  "/etc/sudoers.d",
  "/etc/security/opasswd",
  "/etc/ssl/private",
];

/** Where the homes of the machine's users live (other users' homes are never visible). */
const HOMES_ROOTS = ["/home", "/root"];

/**
 * The secrets to hide for a user whose home is `home`, plus `extra` (`.pml.json` `sandbox.deny`):
 * each as given and, for a symlink, as its target. When `pml` runs as root, the files of `/etc`
 * that only root may read are added: a sandbox's uid still owns root's files for the kernel, so
 * what the permission bits keep from other users must be hidden instead.
 */
export function secretPaths(
  home: string | undefined,
  extra: readonly string[] = [],
  asRoot = Deno.uid() === 0,
  pmlHome?: string,
): string[] {
  const out = new Set<string>();
  const add = (path: string) => {
    out.add(path);
    const target = realPathOf(path);
    if (target && target !== path) out.add(target);
  };
  if (home) { for (const rel of HOME_SECRETS) add(join(home, rel)); }
  for (const path of [...SYSTEM_SECRETS, ...extra, ...(pmlHome ? [pmlHome] : [])]) add(path);
  if (asRoot) { for (const path of rootOnlyFiles("/etc")) out.add(path); }
  return [...out].sort();
}

/** Files and folders under `dir` that others cannot read (mode without `o+r`), not descended. */
function rootOnlyFiles(dir: string, depth = 0): string[] {
  const found: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch {
    return found;
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isSymlink) continue;
    let mode: number | null;
    try {
      mode = Deno.lstatSync(path).mode;
    } catch {
      continue;
    }
    if (mode !== null && (mode & 0o004) === 0) found.push(path);
    else if (entry.isDirectory && depth < 4) found.push(...rootOnlyFiles(path, depth + 1));
  }
  return found;
}

/**
 * The toolbox view for a user with this `HOME` and `PATH`: the system folders, the home and every
 * folder on `PATH` (real paths), minus what lies in a secret or in another user's home.
 */
export function toolboxReads(
  env: { readonly HOME?: string; readonly PATH?: string },
  secrets: readonly string[],
): string[] {
  const home = env.HOME && isAbsolute(env.HOME) ? realPathOf(env.HOME) : undefined;
  const out = new Set<string>(SYSTEM_TOOLBOX.filter(exists));
  if (home && home !== "/") out.add(home);
  for (const dir of (env.PATH ?? "").split(":")) {
    if (!isAbsolute(dir)) continue;
    const path = realPathOf(dir);
    if (!path || path === "/") continue;
    if ([...out].some((root) => within(path, root))) continue;
    if (secrets.some((s) => within(path, s))) continue;
    if (HOMES_ROOTS.some((h) => within(path, h)) && !(home && within(path, home))) continue;
    out.add(path);
  }
  return [...out];
}

/** The narrow view: Deno's shared libraries. */
export function libsReads(): string[] {
  return SYSTEM_LIBS.filter(exists);
}

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
  readonly view: "toolbox" | "narrow";
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
  // next look at the machine: see HOST_VIEW_REUSE_MS).
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
 * How long one look at the machine (the view's folders, the secrets that exist, and as root the
 * walk of `/etc` for files only root may read) is reused by {@link sandboxPolicy} (ms). The policy
 * is built for every sandboxed call, for the pool to compare with its warm sandbox's; that look
 * (~100 path checks, most of them failing, and ~1,200 entries of `/etc`) took most of the CPU of a
 * `read_file` through `pml serve` when it ran each time. A secret that appears is hidden from the
 * sandboxes started or replaced from the next look on, at most this long later (a running sandbox
 * sees the files as they are until it is replaced, in any case).
 */
export const HOST_VIEW_REUSE_MS = 1000;

/** A computation reused for a while per key, which a caller can also refresh ahead of a use. */
export interface Reused<T> {
  /** `compute(key)`, or its value from less than the reuse window ago (`now` in ms). */
  (key: string, now?: number): T;
  /** Computes again now every key used less than `usedWithinMs` ago (the others are dropped). */
  refresh(usedWithinMs: number, now?: number): void;
}

/**
 * `compute(key)`, reused for `reuseMs` after it ran for that key (`now` in ms; a clock set back
 * computes again). `refresh` takes the looks of the keys in use again ahead of their next use.
 *
 * @example
 * ```ts
 * const look = reusedFor(1000, (key) => key.length);
 * look("a", 0); look("a", 500); // computed once
 * look.refresh(10_000, 900); look("a", 1500); // computed at 900, reused at 1500
 * ```
 */
export function reusedFor<T>(reuseMs: number, compute: (key: string) => T): Reused<T> {
  const last = new Map<string, { at: number; usedAt: number; value: T }>();
  const look = (key: string, now = Date.now()) => {
    const hit = last.get(key);
    if (hit && now >= hit.at && now - hit.at < reuseMs) {
      hit.usedAt = now;
      return hit.value;
    }
    const value = compute(key);
    last.set(key, { at: now, usedAt: now, value });
    return value;
  };
  look.refresh = (usedWithinMs: number, now = Date.now()) => {
    for (const [key, entry] of last) {
      if (now < entry.usedAt || now - entry.usedAt >= usedWithinMs) last.delete(key);
      else last.set(key, { ...entry, at: now, value: compute(key) });
    }
  };
  return look;
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

/** The machine's part of a policy, by `[view, HOME, PATH, deny, PML_HOME]` (JSON). */
const hostView = reusedFor(HOST_VIEW_REUSE_MS, (key) => {
  const [view, home, path, deny, pmlHome] = JSON.parse(key) as [
    PolicyInput["view"],
    string | null,
    string | null,
    string[],
    string | null,
  ];
  const env = { HOME: home ?? undefined, PATH: path ?? undefined };
  const own = pmlHome && isAbsolute(pmlHome) ? pmlHome : undefined;
  const secrets = secretPaths(env.HOME, deny, undefined, own);
  const found = existing(secrets);
  const shown = new Map<string, string>();
  const toolbox = view === "toolbox" ? toolboxReads(env, secrets) : undefined;
  return {
    view: toolbox ?? libsReads(),
    denyRead: found.map(([path]) => path),
    listing: toolbox && listingOf(toolbox, found.map(([path]) => path)),
    /**
     * The identities of the secrets a sandbox with these roots sees (only those are bound), once
     * per set of roots and look: a policy is made for every call.
     */
    shownIn(read: readonly string[], write: readonly string[]): string {
      const key = JSON.stringify([read, write]);
      let ids = shown.get(key);
      if (ids === undefined) {
        const roots = [...read, ...write];
        ids = found.filter(([path]) => roots.some((root) => within(path, root)))
          .map(([, id]) => id).join(" ");
        shown.set(key, ids);
      }
      return ids;
    },
  };
});

/** The digest of the names in each folder of `roots` above one of `secrets` (see `listing`). */
function listingOf(roots: readonly string[], secrets: readonly string[]): string {
  const folders = new Set<string>();
  for (const secret of secrets) {
    for (let dir = dirname(secret); dir !== dirname(dir); dir = dirname(dir)) {
      if (!roots.some((root) => within(dir, root))) break;
      folders.add(dir);
    }
  }
  let hash = 0x811c9dc5; // FNV-1a: a change detector, not a secret
  for (const dir of [...folders].sort()) {
    let names: string[] = [];
    try {
      names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
    } catch { /* unreadable: no names */ }
    for (const ch of `${dir}\0${names.join("\0")}\n`) {
      hash = Math.imul(hash ^ ch.charCodeAt(0), 0x01000193) >>> 0;
    }
  }
  return hash.toString(16);
}

/** The entries of `paths` that exist, each with its {@link entryIdentity}. */
function existing(paths: readonly string[]): [path: string, id: string][] {
  return paths.flatMap((path) => {
    const id = entryIdentity(path);
    return id === undefined ? [] : [[path, id] as [string, string]];
  });
}

/**
 * Takes the machine's look again now for every `[view, HOME, PATH, deny, PML_HOME]` a policy used less than
 * `usedWithinMs` ago, so that the next policies within {@link HOST_VIEW_REUSE_MS} reuse it instead
 * of looking on a call's path (`sandbox/look_ahead.ts`). Looks of keys not used that recently are
 * dropped (the next policy for them looks again).
 */
export function refreshHostViews(usedWithinMs: number, now?: number): void {
  hostView.refresh(usedWithinMs, now);
}
