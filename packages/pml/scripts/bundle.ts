/**
 * `deno task bundle [outdir]`: the bundled form of the client, built with `deno bundle` (minified,
 * npm packages external: they come from the install's `node_modules`):
 *
 * - `pml.js`: `main.ts` and everything it imports from the sources;
 * - `sandbox/std_entry.js`, `sandbox/exec_entry.js`, `sandbox/_runner.js`: the sandbox entries,
 *   each with what it imports (the std modules for `std_entry`), spawned as separate processes;
 *   `sandbox/landlock_exec.js`, the launcher of the Landlock wall.
 *
 * The default outdir is `packages/pml/dist`. An outdir must sit directly in `packages/pml` (as
 * `src/` does): `src/paths.ts` finds the repository root from there. Run it with the repository's
 * `deno.json` as config (as `bin/pml` does) so that the npm packages resolve.
 */
import { basename, dirname, join, relative, resolve } from "node:path";

const PKG = resolve(import.meta.dirname!, "..");

/** The npm packages the client imports; the install provides them. */
const EXTERNAL = [
  "@modelcontextprotocol/sdk/*",
  "zod",
  "@babel/parser",
  "smol-toml",
  "dotenv",
  "npm:*",
];

/** Files of the bundled form, relative to its folder, with the source each is built from. */
export const BUNDLE_ENTRIES: readonly { readonly out: string; readonly src: string }[] = [
  { out: "pml.js", src: "main.ts" },
  { out: "sandbox/std_entry.js", src: "src/sandbox/std_entry.ts" },
  { out: "sandbox/exec_entry.js", src: "src/sandbox/exec_entry.ts" },
  { out: "sandbox/_runner.js", src: "src/sandbox/_runner.ts" },
  { out: "sandbox/landlock_exec.js", src: "src/sandbox/landlock_exec.ts" },
];

/**
 * Builds the bundled form into `outDir` (a folder directly inside `packages/pml`). `sourcemap`
 * also writes each file's source map beside it (`pml.js.map`; for `deno task size --parts`, never
 * in the package).
 */
export async function bundle(
  outDir: string = join(PKG, "dist"),
  opts: { sourcemap?: boolean } = {},
): Promise<void> {
  const out = resolve(outDir);
  if (dirname(out) !== PKG || basename(out) === "src") {
    throw new Error(
      `bundle: the output folder must be directly inside packages/pml (got "${
        relative(PKG, out) || "."
      }")`,
    );
  }
  for (const entry of BUNDLE_ENTRIES) {
    const result = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform=deno",
        "--minify",
        ...(opts.sourcemap ? ["--sourcemap=external"] : []),
        "--packages=external",
        ...EXTERNAL.map((e) => `--external=${e}`),
        "--config",
        join(PKG, "..", "..", "deno.json"),
        "-o",
        join(out, entry.out),
        join(PKG, entry.src),
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!result.success) {
      throw new Error(
        `bundle: deno bundle ${entry.src} failed: ${new TextDecoder().decode(result.stderr)}`,
      );
    }
  }
}

if (import.meta.main) {
  const out = Deno.args[0] ?? join(PKG, "dist");
  await bundle(out);
  console.log(`bundled form written to ${relative(Deno.cwd(), out) || "."}`);
}
