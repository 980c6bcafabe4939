/**
 * Writes of `.pml.json` by `pml` itself on a human's decision (the "always" answer, `pml import`):
 * atomic, and the workspace's trust follows (DESIGN §13 "Workspace trust"): content that applied
 * before (trusted, or widening nothing, or no file) stays trusted in its new form; an untrusted
 * file stays untrusted, since one decision does not vouch for the rest of it.
 *
 * @module
 */
import { dirname } from "node:path";
import { readPmlFile } from "./config.ts";
import { keepTrusted } from "./trust_store.ts";
import { wideningOf } from "./widening.ts";
import { writeFileAtomic } from "./write_json.ts";

/**
 * Writes `text` to the `.pml.json` at `path` (in the workspace folder, a real path) and updates
 * the trust store under `pmlHome` in the same step.
 *
 * @example
 * ```ts
 * await writeHumanConfig(config.configPath, JSON.stringify(next, null, 2) + "\n", config);
 * ```
 */
export async function writeHumanConfig(
  path: string,
  text: string,
  at: { readonly pmlHome: string; readonly env: Readonly<Record<string, string>> },
): Promise<void> {
  const folder = dirname(path);
  const before = await Deno.readTextFile(path).catch((err) => {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw err;
  });
  await writeFileAtomic(path, text);
  const applied = before !== undefined && widensNothing(before, path, folder, at.env);
  await keepTrusted(at.pmlHome, folder, before, text, applied);
}

function widensNothing(
  text: string,
  path: string,
  folder: string,
  env: Readonly<Record<string, string>>,
): boolean {
  try {
    return wideningOf(readPmlFile(text, path, env).written, folder).length === 0;
  } catch {
    return false; // it did not load: it applied nothing, and vouches for nothing
  }
}
