/**
 * What `shell:exec` adds to a result whose command the sandbox refused (docs/security.md,
 * "Refusals that say how to grant"): the operating system says `Read-only file system`, `Could not
 * resolve host` or `EAI_AGAIN`, which names no cause; the hint names the grant of `.pml.json` that
 * would allow it (`sandbox.write`, `sandbox.net`), with the line to write, and that a human's
 * `pml trust` applies it. Hosts the network proxy refused are named as it saw them.
 *
 * @module
 */
import { dirname, resolve } from "node:path";
import { within } from "../../config/control_files.ts";

/** What a hint is drawn from: the command's output and the sandbox's grants. */
export interface ShellRefusal {
  readonly stdout: string;
  readonly stderr: string;
  /** `host:port` destinations the network proxy refused during the call. */
  readonly refusedHosts: readonly string[];
  /** The `sandbox.net` grants (none: the sandbox has no network at all). */
  readonly net: readonly string[];
  /** The workspace (the command's working directory): relative paths are read from it. */
  readonly workspace: string;
  /** The `sandbox.write` grants (real paths). */
  readonly write: readonly string[];
}

/**
 * A `shell:exec` outcome with a `hint` when its command met the sandbox's walls: which grant of
 * `.pml.json` would allow it. Any other value is returned as it is.
 */
export function withShellHint(
  value: unknown,
  refusedHosts: readonly string[],
  config: {
    readonly workspace: string;
    readonly sandbox: { readonly net: readonly string[]; readonly write: readonly string[] };
  },
): unknown {
  const out = value as { stdout?: unknown; stderr?: unknown } | null;
  if (typeof out?.stdout !== "string" || typeof out.stderr !== "string") return value;
  const { workspace, sandbox } = config;
  const hint = shellHint({
    stdout: out.stdout,
    stderr: out.stderr,
    refusedHosts,
    net: sandbox.net,
    workspace,
    write: sandbox.write,
  });
  return hint ? { ...out, hint } : value;
}

/** Said once after the hints that name a grant. */
const TRUST = "A grant widens .pml.json: it applies once a human runs `pml trust`.";

/** A network failure as programs word it (curl, npm and Node, Python, git, getaddrinfo). */
const NET_FAILURE =
  /Could not resolve host|EAI_AGAIN|ENOTFOUND|ECONNREFUSED|ENETUNREACH|getaddrinfo|Temporary failure in name resolution|Name or service not known|Network is unreachable|Failed to connect to|Couldn't connect to server|CONNECT tunnel failed/;

/** Host names a failure line names (curl's and Node's forms). */
const FAILED_HOST = [
  /Could not resolve host: ([^\s'"]+)/,
  /(?:EAI_AGAIN|ENOTFOUND) ([A-Za-z0-9.-]+)/,
  /Failed to connect to ([^\s]+) port (\d+)/,
  /request to https?:\/\/([^/\s:]+)(?::\d+)?\//,
];

/** A quoted path on a `Read-only file system` line (coreutils, Node's EROFS, Python's Errno 30). */
const READ_ONLY = /(?:EROFS|Read-only file system|read-only file system)/;
/** The path of such a line: quoted (coreutils, Node, Python) or after `sh`'s "cannot create". */
const PATH_OF = [/[‘'"`]([^’'"`\n]+)[’'"`]/, /cannot create ([^:\n]+):/];

/**
 * The hint for a command's output, or `undefined` when nothing in it reads as a refusal of the
 * sandbox.
 *
 * @example
 * ```ts
 * shellHint({
 *   stdout: "",
 *   stderr: "curl: (6) Could not resolve host: example.org",
 *   refusedHosts: [],
 *   net: [],
 *   workspace: "/w",
 *   write: [],
 * });
 * // 'The sandbox has no network: … "sandbox": {"net": ["example.org"]} …'
 * ```
 */
export function shellHint(r: ShellRefusal): string | undefined {
  const output = `${r.stdout}\n${r.stderr}`;
  const hints = [netHint(r, output), writeHint(r, output), busyHint(r, output)]
    .filter((h) => h !== undefined);
  if (!hints.length) return undefined;
  return [...hints, ...(hints.some((h) => h.includes('"sandbox":')) ? [TRUST] : [])].join(" ");
}

function netHint(r: ShellRefusal, output: string): string | undefined {
  const refused = [...new Set(r.refusedHosts)];
  if (refused.length) {
    return `The sandbox refused network access to ${refused.join(", ")}: sandbox.net does not ` +
      `grant ${refused.length === 1 ? "it" : "them"}. A human grants a host in .pml.json with ` +
      `"sandbox": {"net": ${JSON.stringify(refused)}}.`;
  }
  if (!NET_FAILURE.test(output)) return undefined;
  const host = failedHost(output);
  const line = `"sandbox": {"net": [${JSON.stringify(host ?? "HOST")}]}`;
  if (r.net.length === 0) {
    return `The sandbox has no network: .pml.json grants no host in sandbox.net. A human grants ` +
      `the hosts a command needs with ${line}.`;
  }
  return `The sandbox reaches only the hosts of sandbox.net (${r.net.join(", ")}), through the ` +
    `proxy that HTTP_PROXY, HTTPS_PROXY and ALL_PROXY name: a program that ignores them (or ` +
    `resolves names itself) reaches nothing${
      host && !r.net.some((g) => g.split(":")[0] === host)
        ? `, and "${host}" is not granted (${line})`
        : ""
    }.`;
}

function failedHost(output: string): string | undefined {
  for (const re of FAILED_HOST) {
    const m = re.exec(output);
    if (m) return m[2] ? `${m[1]}:${m[2]}` : m[1];
  }
  return undefined;
}

function writeHint(r: ShellRefusal, output: string): string | undefined {
  const line = output.split("\n").find((l) => READ_ONLY.test(l));
  if (line === undefined) return undefined;
  const given = PATH_OF.map((re) => re.exec(line)?.[1]).find((p) => p !== undefined);
  const path = given === undefined ? undefined : resolve(r.workspace, given);
  if (path && [r.workspace, ...r.write].some((root) => within(path, root))) {
    return `"${path}" is read-only in the sandbox: PML's control files and the files the host ` +
      `runs later (.pml.json, .pml/, .git/config, .git/hooks/, shell rc files, client ` +
      `configurations) are never written by a tool, and no grant opens them.`;
  }
  const folder = path ? dirname(path) : "FOLDER";
  return `The sandbox writes only the workspace and the sandbox.write grants${
    path ? `, not "${path}"` : ""
  } (caches go to its private /tmp). A human grants a folder in .pml.json with ` +
    `"sandbox": {"write": [${JSON.stringify(folder)}]}.`;
}

/** git's words when it cannot delete a folder (`git worktree remove`, `git worktree prune`). */
const GIT_NOT_DELETED = /failed to delete '([^'\n]+)': Device or resource busy/;
/** A path that could not be removed or moved because something is mounted on it or inside it. */
const BUSY = /[‘'"`]([^’'"`\n]+)[’'"`]: Device or resource busy|EBUSY[^'\n]*'([^'\n]+)'/;

/**
 * A folder the command could not remove or move (`Device or resource busy`): it holds files the
 * sandbox keeps read-only by binding them, so the folder is a mount point or holds one. A linked
 * worktree is the common case: its `.git` file and `.git/worktrees/<name>` are such files, so git
 * cannot remove it from the sandbox (docs/security.md "Protected files").
 */
function busyHint(r: ShellRefusal, output: string): string | undefined {
  const git = GIT_NOT_DELETED.exec(output);
  const m = git ?? BUSY.exec(output);
  const given = m?.[1] ?? m?.[2];
  if (given === undefined) return undefined;
  const path = resolve(r.workspace, given);
  if (![r.workspace, ...r.write].some((root) => within(path, root))) return undefined;
  const what = `"${path}" holds files the sandbox keeps read-only (a linked worktree's .git file ` +
    `and .git/worktrees/<name>, .git/config, hooks, control files): it cannot be removed or ` +
    `moved from the sandbox, and no grant opens it.`;
  return git
    ? `${what} A linked worktree is removed by a human, outside the sandbox: \`git worktree ` +
      `remove --force <its path>\` (git may have deleted its checked-out files before it stopped).`
    : what;
}
