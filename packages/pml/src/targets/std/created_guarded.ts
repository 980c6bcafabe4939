/**
 * Guarded files (control, host-run and instruction files, `config/control_files.ts`) that a
 * `shell:exec` command created where none existed. The OS sandbox can bind only existing files
 * read-only, so the std target notes which were missing before a command (and walks the folders
 * again after it, for git dirs it created: `sub/.git`, a bare repository) and removes what
 * appeared, with the exceptions git itself makes: a repository the command created (`git init`,
 * `git clone`, a submodule's `.git/modules/<name>`) keeps the `config` and `hooks/` git wrote, once
 * checked (the config may hold only the keys git itself writes for a new repository and its
 * remotes, the hooks folder only git's `*.sample` files, never run); a linked worktree
 * (`git worktree add`) keeps its `commondir` and `gitdir` when they name each other as git writes
 * them; a gitfile (`wt/.git`, `sub/.git`) stays when it names such a worktree's or submodule's git
 * dir. Anything else is removed and the result says so.
 *
 * @module
 */
import { basename, dirname, join, resolve, sep } from "node:path";
import { entryExists } from "../../exists.ts";

/** What a fresh repository's `config` may hold (git's own keys; no command, no hook path). */
const NEW_REPO_KEYS = [
  /^core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks)$/,
  /^extensions\.(objectformat|refstorage)$/,
  /^remote\.[^\n]+\.(url|fetch|pushurl)$/,
  /^branch\.[^\n]+\.(remote|merge)$/,
  /^user\.(name|email)$/,
];

/** What a submodule's git dir (`.git/modules/<name>/config`) may hold besides: where its worktree is. */
const SUBMODULE_KEYS = [...NEW_REPO_KEYS, /^core\.worktree$/];

/** The guarded paths of `guarded` that do not exist yet (not even as a dangling link). */
export function missingGuarded(guarded: readonly string[]): string[] {
  return guarded.filter((path) => !entryExists(path));
}

/** One guarded path a command created, and what became of it. */
export interface CreatedGuarded {
  readonly path: string;
  /** `removed`, or `checked` (a new repository's config or hooks, left as git wrote them). */
  readonly outcome: "removed" | "checked";
  readonly why?: string;
}

/**
 * Removes the guarded paths of `wereMissing` that exist now, except a new repository's config and
 * hooks that pass the check. `reposBefore`: the `.git` folders that existed before the command.
 */
export async function settleCreatedGuarded(
  wereMissing: readonly string[],
  runGit: (args: string[]) => Promise<{ ok: boolean; stdout: string }> = defaultGit,
): Promise<CreatedGuarded[]> {
  const out: CreatedGuarded[] = [];
  const missing = new Set(wereMissing);
  for (const path of wereMissing) {
    if (!entryExists(path)) continue;
    const gitDir = dirname(path);
    const name = basename(path);
    const newRepo = missing.has(join(gitDir, "config")) && missing.has(join(gitDir, "hooks"));
    if (newRepo && name === "config") {
      const keys = gitDir.split(sep).includes("modules") ? SUBMODULE_KEYS : NEW_REPO_KEYS;
      const bad = await unexpectedConfigKeys(path, keys, runGit);
      if (bad.length === 0) {
        out.push({ path, outcome: "checked" });
        continue;
      }
      await remove(path);
      out.push({ path, outcome: "removed", why: `it set ${bad.map((k) => `"${k}"`).join(", ")}` });
      continue;
    }
    if (newRepo && name === "hooks") {
      const extra = await hooksBesidesSamples(path);
      for (const hook of extra) await remove(join(path, hook));
      out.push(
        extra.length
          ? { path, outcome: "removed", why: `hooks ${extra.map((h) => `"${h}"`).join(", ")}` }
          : { path, outcome: "checked" },
      );
      continue;
    }
    if ((name === "commondir" || name === "gitdir") && linkedWorktree(gitDir)) {
      out.push({ path, outcome: "checked" });
      continue;
    }
    if (name === ".git" && gitfileOfWorktreeOrModule(path)) {
      out.push({ path, outcome: "checked" });
      continue;
    }
    await remove(path);
    out.push({ path, outcome: "removed" });
  }
  return out;
}

/** Text of a file, trimmed, or `undefined`. */
function textOf(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path).trim();
  } catch {
    return undefined;
  }
}

/**
 * True for a linked worktree's git dir as `git worktree add` writes it: `<git dir>/worktrees/<n>`
 * whose `commondir` is `../..` and whose `gitdir` names a `.git` file that names this folder back.
 */
function linkedWorktree(dir: string): boolean {
  if (basename(dirname(dir)) !== "worktrees") return false;
  if (textOf(join(dir, "commondir")) !== "../..") return false;
  const gitfile = textOf(join(dir, "gitdir"));
  if (!gitfile || basename(gitfile) !== ".git") return false;
  return gitfileTarget(gitfile) === dir;
}

/** The git dir a gitfile names (`gitdir: <path>`, relative to its folder), or `undefined`. */
function gitfileTarget(gitfile: string): string | undefined {
  const text = textOf(gitfile);
  const m = text && /^gitdir: (.+)$/.exec(text);
  return m ? resolve(dirname(gitfile), m[1]) : undefined;
}

/** True for a gitfile naming a linked worktree's git dir, or a submodule's (`…/.git/modules/…`). */
function gitfileOfWorktreeOrModule(path: string): boolean {
  const target = gitfileTarget(path);
  if (!target) return false;
  const parts = target.split(sep);
  const at = parts.lastIndexOf(".git");
  if (at < 0 || !["worktrees", "modules"].includes(parts[at + 1])) return false;
  if (parts[at + 1] === "worktrees") return linkedWorktree(target);
  return entryExists(join(target, "HEAD"));
}

async function remove(path: string): Promise<void> {
  await Deno.remove(path, { recursive: true }).catch(() => {});
}

/** Keys of a git config file outside `allowed`, as git itself reads them. */
async function unexpectedConfigKeys(
  file: string,
  allowed: readonly RegExp[],
  runGit: (args: string[]) => Promise<{ ok: boolean; stdout: string }>,
): Promise<string[]> {
  const listed = await runGit(["config", "--file", file, "--no-includes", "--null", "--list"]);
  // Unreadable for git (or no git here): nothing proves it harmless.
  if (!listed.ok) return ["(a config git cannot read)"];
  const keys = listed.stdout.split("\0").filter(Boolean).map((entry) => entry.split("\n")[0]);
  return [...new Set(keys.filter((key) => !allowed.some((re) => re.test(key))))];
}

/** Entries of a hooks folder other than git's `*.sample` files (a folder too). */
async function hooksBesidesSamples(dir: string): Promise<string[]> {
  const extra: string[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (!(entry.isFile && entry.name.endsWith(".sample"))) extra.push(entry.name);
    }
  } catch {
    return [];
  }
  return extra;
}

/** Git on the host, with no configuration of the user's or the system's read. */
async function defaultGit(args: string[]): Promise<{ ok: boolean; stdout: string }> {
  try {
    const out = await new Deno.Command("git", {
      args,
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin:/usr/local/bin", GIT_CONFIG_NOSYSTEM: "1", HOME: "/nonexistent" },
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).output();
    return { ok: out.success, stdout: new TextDecoder().decode(out.stdout) };
  } catch {
    return { ok: false, stdout: "" };
  }
}
