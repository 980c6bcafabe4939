/**
 * What the sandbox policies see of the machine (`policy.ts` builds each policy from it): the system
 * folders of the two views, the secrets under `HOME` and of the system (as root, also the files of
 * `/etc` only root may read), and one look at the machine per `[view, HOME, PATH, deny, PML_HOME]`,
 * reused for {@link HOST_VIEW_REUSE_MS} and taken ahead of the calls that need it
 * ({@link refreshHostViews}, `look_ahead.ts`).
 *
 * @module
 */
import { entryIdentity, exists, realPathOf } from "../exists.ts";
import { dirname, isAbsolute, join } from "node:path";
import { within } from "../config/control_files.ts";

/** `toolbox` for programs, `narrow` for Deno code (`policy.ts`). */
export type SandboxView = "toolbox" | "narrow";

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

/**
 * How long one look at the machine (the view's folders, the secrets that exist, and as root the
 * walk of `/etc` for files only root may read) is reused by `sandboxPolicy` (ms). The policy
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

/** The machine's part of a policy, by `[view, HOME, PATH, deny, PML_HOME]` (JSON). */
export const hostView = reusedFor(HOST_VIEW_REUSE_MS, (key) => {
  const [view, home, path, deny, pmlHome] = JSON.parse(key) as [
    SandboxView,
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
export function existing(paths: readonly string[]): [path: string, id: string][] {
  return paths.flatMap((path) => {
    const id = entryIdentity(path);
    return id === undefined ? [] : [[path, id] as [string, string]];
  });
}

/**
 * Takes the machine's look again now for every `[view, HOME, PATH, deny, PML_HOME]` a policy used
 * less than `usedWithinMs` ago, so that the next policies within {@link HOST_VIEW_REUSE_MS} reuse it instead
 * of looking on a call's path (`sandbox/look_ahead.ts`). Looks of keys not used that recently are
 * dropped (the next policy for them looks again).
 */
export function refreshHostViews(usedWithinMs: number, now?: number): void {
  hostView.refresh(usedWithinMs, now);
}
