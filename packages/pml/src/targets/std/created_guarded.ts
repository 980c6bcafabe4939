/**
 * Guarded files (control and protected, `config/control_files.ts`) that a `shell:exec` command
 * created where none existed. The OS sandbox can bind only existing files read-only, so the std
 * target notes which were missing before a command and removes what appeared, with one exception:
 * a repository the command created (`git init`, `git clone`) keeps the `.git/config` and
 * `.git/hooks/` git wrote, once checked: the config may hold only the keys git itself writes for a
 * new repository and its remotes, the hooks folder only git's `*.sample` files (never run).
 * Anything else is removed and the result says so.
 *
 * @module
 */
import { basename, dirname, join } from "node:path";
import { entryExists } from "../../exists.ts";

/** What a fresh repository's `.git/config` may hold (git's own keys; no command, no hook path). */
const NEW_REPO_KEYS = [
  /^core\.(repositoryformatversion|filemode|bare|logallrefupdates|ignorecase|precomposeunicode|symlinks)$/,
  /^extensions\.(objectformat|refstorage)$/,
  /^remote\.[^\n]+\.(url|fetch|pushurl)$/,
  /^branch\.[^\n]+\.(remote|merge)$/,
  /^user\.(name|email)$/,
];

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
    const newRepo = basename(gitDir) === ".git" && missing.has(join(gitDir, "config")) &&
      missing.has(join(gitDir, "hooks"));
    if (newRepo && basename(path) === "config") {
      const bad = await unexpectedConfigKeys(path, runGit);
      if (bad.length === 0) {
        out.push({ path, outcome: "checked" });
        continue;
      }
      await remove(path);
      out.push({ path, outcome: "removed", why: `it set ${bad.map((k) => `"${k}"`).join(", ")}` });
      continue;
    }
    if (newRepo && basename(path) === "hooks") {
      const extra = await hooksBesidesSamples(path);
      for (const hook of extra) await remove(join(path, hook));
      out.push(
        extra.length
          ? { path, outcome: "removed", why: `hooks ${extra.map((h) => `"${h}"`).join(", ")}` }
          : { path, outcome: "checked" },
      );
      continue;
    }
    await remove(path);
    out.push({ path, outcome: "removed" });
  }
  return out;
}

async function remove(path: string): Promise<void> {
  await Deno.remove(path, { recursive: true }).catch(() => {});
}

/** Keys of a git config file outside {@link NEW_REPO_KEYS}, as git itself reads them. */
async function unexpectedConfigKeys(
  file: string,
  runGit: (args: string[]) => Promise<{ ok: boolean; stdout: string }>,
): Promise<string[]> {
  const listed = await runGit(["config", "--file", file, "--no-includes", "--null", "--list"]);
  // Unreadable for git (or no git here): nothing proves it harmless.
  if (!listed.ok) return ["(a config git cannot read)"];
  const keys = listed.stdout.split("\0").filter(Boolean).map((entry) => entry.split("\n")[0]);
  return [...new Set(keys.filter((key) => !NEW_REPO_KEYS.some((re) => re.test(key))))];
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
