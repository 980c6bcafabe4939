/**
 * The published form: `@casys/pml` packed with `npm pack` (`packages/pml/scripts/pack.ts`),
 * installed with `npm install` into a fresh project, and run as a client would run it, through
 * `node_modules/.bin/pml`. Its dependencies come from the npm registry, as those of `npm ci` do;
 * the tarballs `npm ci` put in the npm cache are used first (`--prefer-offline`).
 */
import { join } from "node:path";
import { installPacked } from "../../packages/pml/scripts/pack.ts";
import { assert } from "../../packages/pml/src/testing/assert.ts";
import {
  FILESYSTEM_ALLOWED,
  tempWorkspace,
  textOf,
} from "../../packages/pml/src/testing/workspace.ts";
import { assertServesWorkspace, commandsOnceRunning, connectStdio } from "./_spawn.ts";

Deno.test("npm package: `npm install` of the packed @casys/pml gives a `pml` that serves tools, runs pml:execute and knows its catalogue", async () => {
  const project = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-npm-project-" }));
  await using ws = tempWorkspace(FILESYSTEM_ALLOWED);
  try {
    const { packed, pkg, bin } = await installPacked(project);
    for (const f of ["bin/pml", "dist/pml.js", "dist/sandbox/std_entry.js", "package.json"]) {
      assert(packed.files.includes(f), `${f} is not in the package: ${packed.files.join(", ")}`);
    }
    assert(packed.files.some((f) => f.startsWith("registry/mcp/")), packed.files.join(", "));
    assert(!packed.files.some((f) => f.endsWith(".ts")), "sources are not shipped");

    ws.write("a.txt", "from the package");
    await using client = await connectStdio(ws, {
      command: bin,
      env: { PML_REGISTRY_URL: "http://127.0.0.1:9" },
    });
    await assertServesWorkspace(client, "from the package");
    // A stdio MCP of the package's own catalogue is known (its install is asked for, not run).
    const memory = await client.callTool({ name: "memory__read_graph", arguments: {} });
    assert(textOf(memory).includes("@modelcontextprotocol/server-memory"), textOf(memory));

    // Everything runs from the package: the bundle and its sandbox entries, no sources.
    const want = [join(pkg, "dist", "pml.js"), join(pkg, "dist", "sandbox", "std_entry.js")];
    const commands = await commandsOnceRunning(client.pid, want, 5_000);
    for (const w of want) assert(commands.includes(w), `${w} not running:\n${commands}`);
    assert(!/\.ts\b/.test(commands), commands);
  } finally {
    Deno.removeSync(project, { recursive: true });
  }
});
