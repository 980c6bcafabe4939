/**
 * `pml` entry point: argv → runCli → exit code.
 * @module
 */
import { runCli } from "./src/cli/run.ts";
import { processIo } from "./src/cli/io.ts";

if (import.meta.main) {
  const code = await runCli(Deno.args, processIo(), Deno.env.get("PML_LAUNCHER") || "pml");
  Deno.exit(code);
}
