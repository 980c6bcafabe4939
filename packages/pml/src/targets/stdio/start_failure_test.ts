/**
 * A failed start in PML's words, from what a real runtime wrote on stderr: Node's ES module loader
 * names a package it did not find, then a stack trace longer than the tail that is shown.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../../testing/assert.ts";
import { startFailureMessage } from "./start_failure.ts";

Deno.test("Node's 'Cannot find package' (an ES module import): the read grant it needs, and that line shown above the stack trace", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "pml-start-failure-" });
  try {
    const script = join(dir, "server.mjs");
    Deno.writeTextFileSync(script, 'import "pml-no-such-package";\n');
    const run = await new Deno.Command("node", { args: [script], stderr: "piped" }).output();
    assert(!run.success);
    const stderr = new TextDecoder().decode(run.stderr);
    const { message, missing } = startFailureMessage("srv", `node ${script}`, "exited", stderr);
    assertEquals(missing?.missing, "read");
    assertEquals(missing?.what, "pml-no-such-package");
    assertStringIncludes(message, "private_mcps.srv.permissions.read");
    assertStringIncludes(message, "Cannot find package 'pml-no-such-package' imported from");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
