/**
 * `pml-server` entry point: argv → {@link runCli} → exit code. See `bin/pml-server`.
 *
 * @module
 */
import { runCli } from "./src/cli/run_cli.ts";

if (import.meta.main) {
  Deno.exit(await runCli(Deno.args));
}
