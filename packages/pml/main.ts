/**
 * `pml` entry point: argv → runCli → exit code.
 * @module
 */
import { runCli } from "./src/cli/run.ts";
import { processIo } from "./src/cli/io.ts";
import { sealInheritedFds } from "./src/sandbox/inherited_fds.ts";

if (import.meta.main) {
  // No process pml starts gets a descriptor pml inherited (docs/security.md "Channels").
  sealInheritedFds();
  const code = await runCli(Deno.args, processIo(), Deno.env.get("PML_LAUNCHER") || "pml");
  Deno.exit(code);
}
