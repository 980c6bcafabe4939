/**
 * `.pml/` kept out of git: `pml init` adds it to the workspace's `.gitignore` (created when there is
 * none), so `git add -A` never stages the audit log, the pending approvals (which quote file
 * contents), the installed servers or the lockfile of one machine. `.gitignore` rather than
 * `.git/info/exclude`: it travels with the repository, so a teammate whose `pml` starts from the
 * committed client files has `.pml/` ignored too, without running `pml init`.
 *
 * @module
 */
import { join } from "node:path";
import { writeFileAtomic } from "../config/write_json.ts";

/** The lines that already ignore the whole folder at the workspace's root. */
const IGNORING = new Set([".pml", ".pml/", "/.pml", "/.pml/", ".pml/*", "/.pml/*", ".pml/**"]);

/** True when `gitignore` (a `.gitignore`'s text) has a line that ignores `.pml/`. */
export function ignoresPml(gitignore: string): boolean {
  return gitignore.split(/\r?\n/).some((line) => IGNORING.has(line.trim()));
}

/**
 * Adds `.pml/` to `<workspace>/.gitignore` unless a line there ignores it already. Returns the
 * path when it wrote, `undefined` when nothing changed.
 */
export async function ignorePmlFolder(workspace: string): Promise<string | undefined> {
  const path = join(workspace, ".gitignore");
  let text = "";
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  if (ignoresPml(text)) return undefined;
  const sep = text === "" || text.endsWith("\n") ? "" : "\n";
  await writeFileAtomic(
    path,
    `${text}${sep}# PML's local state: audit log, approvals, installed servers\n.pml/\n`,
  );
  return path;
}
