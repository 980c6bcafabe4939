/**
 * The bundled form of the client (`packages/pml/scripts/bundle.ts`), spawned as an MCP client
 * would run it: `pml stdio` from `pml.js`, its std and execution sandboxes from the bundled entries.
 */
import { join, resolve } from "node:path";
import { bundle } from "../../packages/pml/scripts/bundle.ts";
import { assert, assertEquals, assertRejects } from "../../packages/pml/src/testing/assert.ts";
import { FILESYSTEM_ALLOWED, tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { assertServesWorkspace, commandsOnceRunning, connectStdio } from "./_spawn.ts";

const ROOT = resolve(import.meta.dirname!, "..", "..");
const PKG = join(ROOT, "packages", "pml");

Deno.test("bundled form: pml stdio serves std tools and pml:execute from the bundle's own sandboxes", async () => {
  const out = Deno.makeTempDirSync({ dir: PKG, prefix: ".bundle-test-" });
  await using ws = tempWorkspace(FILESYSTEM_ALLOWED);
  try {
    await bundle(out);
    ws.write("a.txt", "from the bundle");
    await using client = await connectStdio(ws, {
      command: Deno.execPath(),
      args: [
        "run",
        "--allow-all",
        "--quiet",
        "--no-lock",
        "--config",
        join(ROOT, "deno.json"),
        join(out, "pml.js"),
        "stdio",
      ],
      env: { DENO_NO_UPDATE_CHECK: "1" },
    });
    await assertServesWorkspace(client, "from the bundle");

    // The sandboxes are the bundled entries, not the sources beside them. An execution sandbox
    // ends with its run; the pool starts the next one in the background: wait for it.
    const want = [join(out, "sandbox", "std_entry.js"), join(out, "sandbox", "exec_entry.js")];
    const commands = await commandsOnceRunning(client.pid, want, 10_000);
    for (const w of want) assert(commands.includes(w), `${w} not running:\n${commands}`);
    assert(!/_entry\.ts/.test(commands), commands);
  } finally {
    Deno.removeSync(out, { recursive: true });
  }
});

Deno.test("bundle: an output folder at another depth is refused before anything is written", async () => {
  const elsewhere = Deno.makeTempDirSync({ prefix: "pml-bundle-elsewhere-" });
  try {
    const target = join(elsewhere, "dist");
    await assertRejects(() => bundle(target), Error, "directly inside packages/pml");
    assertEquals([...Deno.readDirSync(elsewhere)].length, 0);
    await assertRejects(() => bundle(join(PKG, "src")), Error, "directly inside packages/pml");
  } finally {
    Deno.removeSync(elsewhere, { recursive: true });
  }
});

Deno.test("bundle: pml.js carries the std modules' __meta__, not their functions (those run in the std sandbox)", async () => {
  const out = Deno.makeTempDirSync({ dir: PKG, prefix: ".bundle-test-" });
  try {
    await bundle(out);
    const gateway = Deno.readTextFileSync(join(out, "pml.js"));
    const sandbox = Deno.readTextFileSync(join(out, "sandbox", "std_entry.js"));
    // A description of __meta__, then a message of filesystem's edit_file and of shell's exec.
    const meta = "Read a UTF-8 text file in the workspace";
    const functions = ["must be a non-empty array of {oldText, newText}", "bytes cut]"];
    assert(gateway.includes(meta), "pml.js lost the std tools' descriptions");
    for (const text of functions) {
      assert(sandbox.includes(text), `std_entry.js lacks "${text}"`);
      assert(!gateway.includes(text), `pml.js carries the std function that says "${text}"`);
    }
  } finally {
    Deno.removeSync(out, { recursive: true });
  }
});
