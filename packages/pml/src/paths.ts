import { exists } from "./exists.ts";
import { join } from "node:path";

/**
 * Where PML finds its own files at run time, in each of its three forms:
 *
 * - the sources, `packages/pml/src/` in the repository;
 * - the bundle in the repository (`scripts/bundle.ts`), a folder directly in `packages/pml`;
 * - the npm package `@casys/pml` (`scripts/pack.ts`): the bundle in `dist/`, the catalogue of
 *   stdio MCPs in `registry/mcp/` beside it.
 *
 * Computed from this module's folder. In the repository, `src/` and the bundle's folder sit at the
 * same depth of `packages/pml`, so the repository root is the same; the sandbox entries are `.ts`
 * files beside the sources or `.js` bundles beside the bundle.
 */
const HERE = import.meta.dirname!;

/** True when this code runs from a bundle (in the repository or in the npm package). */
const BUNDLED = import.meta.url.endsWith(".js");

/** True when this code runs from the npm package: `registry/` sits beside `dist/`. */
const PACKAGED = BUNDLED && exists(join(HERE, "..", "registry", "mcp"));

/** The root of PML's own files: the repository, or the npm package's folder. */
const ROOT = PACKAGED ? join(HERE, "..") : join(HERE, "..", "..", "..");

/** Folders of PML's own code and data, bound read-only into the OS sandbox. */
export const PML_CODE_DIRS: readonly string[] = PACKAGED
  ? [ROOT]
  : [join(ROOT, "packages", "pml"), join(ROOT, "registry")];

/** The catalogue of stdio MCPs PML knows without a registry (`registry/mcp/*.json`). */
export const CATALOGUE_DIR = join(ROOT, "registry", "mcp");

/**
 * The entry of a sandbox process (`std_entry`, `exec_entry`, `_runner`), or the Landlock wall's
 * launcher (`landlock_exec`), for this form.
 */
export function sandboxEntry(
  name: "std_entry" | "exec_entry" | "_runner" | "landlock_exec",
): string {
  return join(HERE, "sandbox", `${name}${BUNDLED ? ".js" : ".ts"}`);
}
