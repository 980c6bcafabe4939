import { join } from "node:path";

/**
 * Where PML finds its own files at run time. Computed from this module's folder, which is `src/` in
 * the sources and `dist/` in the bundled form (`scripts/bundle.ts`): both sit at the same depth of
 * `packages/pml`, so the repository root is the same, and the sandbox entries are `.ts` files
 * beside the sources or `.js` bundles beside the bundle.
 */
const HERE = import.meta.dirname!;

/** True when this code runs from the bundle. */
const BUNDLED = import.meta.url.endsWith(".js");

/** The root of PML's files: `packages/pml` and `registry/` are in it. */
export const PML_ROOT = join(HERE, "..", "..", "..");

/** The entry of a sandbox process (`std_entry`, `exec_entry`, `_runner`) for this form. */
export function sandboxEntry(name: "std_entry" | "exec_entry" | "_runner"): string {
  return join(HERE, "sandbox", `${name}${BUNDLED ? ".js" : ".ts"}`);
}
