import { createRequire } from "node:module";
import { join } from "node:path";
import { PmlError } from "../errors.ts";

type Dotenv = typeof import("dotenv");
let dotenv: Dotenv | undefined;

/**
 * `dotenv`'s `parse`, loaded on the first `.env` that is read. `dotenv` is CommonJS and loads
 * Deno's `node:fs`, `node:os` and `node:url` with it (~4 ms of every `pml stdio` start, before the
 * first `tools/list`: docs/speed.md), for a file most workspaces never need. `loadConfig` is
 * synchronous, hence `require` rather than `import()`.
 */
function parse(text: string): Record<string, string> {
  dotenv ??= createRequire(import.meta.url)("dotenv") as Dotenv;
  return dotenv.parse(text);
}

/** The workspace file BYOK keys are also read from (epic 14: "reads TAVILY_API_KEY from .env"). */
export const DOTENV_FILE = ".env";

/**
 * The values of the BYOK variables `names` (the `.pml.json` `env` list): from the process
 * environment, else from the workspace's `.env` (dotenv format, parsed by the `dotenv` package).
 * No other name of `.env` is kept, and `.env` is not read at all when `names` is empty. A missing
 * `.env` is no error; one that cannot be read is, naming the file.
 *
 * @example
 * ```ts
 * byokValues(["TAVILY_API_KEY"], { PATH: "/bin" }, "/home/a/proj"); // { TAVILY_API_KEY: "tvly-…" }
 * ```
 */
export function byokValues(
  names: readonly string[],
  env: Readonly<Record<string, string>>,
  workspace: string,
): Readonly<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of names) if (env[name]) out[name] = env[name];
  if (names.every((n) => out[n])) return out;
  const path = join(workspace, DOTENV_FILE);
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return out;
    throw new PmlError("CONFIG_INVALID", `Cannot read ${path}: ${(err as Error).message}`);
  }
  const file = parse(text);
  for (const name of names) {
    if (!out[name] && file[name]) out[name] = file[name];
  }
  return out;
}
