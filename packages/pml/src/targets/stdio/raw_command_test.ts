/**
 * Raw commands of `private_mcps` (`node path/server.mjs`, `uvx …`) in the OS sandbox: the command's
 * own files are readable without a declared grant, its tools are read from the server itself, and
 * a command that cannot start says what is missing (a runtime, a file) at once, never with the
 * sandbox's command line or after a timeout.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../testing/workspace.ts";
import type { StdioTarget } from "./stdio_target.ts";

const ROOT = join(import.meta.dirname!, "..", "..", "..", "..", "..");
const FIXTURE = join(ROOT, "tests", "fixtures", "plain_server.mjs");

/**
 * The fixture server copied into a package folder of its own under the system's temporary folder:
 * outside the workspace and outside every home, wherever the repository was cloned (a clone under
 * a home is another user's home to the sandbox, whose HOME is the test's own).
 */
function serverOutside(): AsyncDisposable & { script: string } {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-raw-server-" }));
  Deno.writeTextFileSync(join(dir, "package.json"), '{ "name": "raw-server", "type": "module" }\n');
  Deno.copyFileSync(FIXTURE, join(dir, "server.mjs"));
  return {
    script: join(dir, "server.mjs"),
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

function workspace(install: { command: string; args: string[] }) {
  return tempWorkspace({
    approvals: "agent",
    permissions: { allow: ["raw"], ask: [], deny: [] },
    private_mcps: { raw: { type: "stdio", install } },
  });
}

Deno.test("raw node server outside the workspace, no grants declared: its own files are readable; its tools come from the server and are pinned", async () => {
  await using server = serverOutside();
  await using ws = workspace({ command: "node", args: [server.script] });
  await using g = await gatewayFor(ws, { elicit: () => "yes" });
  const before = (await g.client.listTools()).tools.map((t) => t.name);
  assert(!before.includes("raw__ask"), "not run before its run is approved");
  const tools = await (g.gateway.target("stdio") as StdioTarget).pinServer("raw");
  assertEquals(tools.map((t) => t.name), ["ask"]);
  const listed = (await g.client.listTools()).tools.find((t) => t.name === "raw__ask");
  assertEquals(listed?.description, "Asks the client's model");
  const lock = JSON.parse(ws.read(".pml/mcp.lock")).entries["pml.mcp.raw.server"];
  assert(lock.tools.ask.startsWith("sha256-"));
  assertEquals(lock.package, undefined, "a raw command pins its command, not a package");
  const r = await g.client.callTool({
    name: "raw__ask",
    arguments: { prompt: "read from its own folder" },
  });
  assertEquals(textOf(r), "read from its own folder");
});

Deno.test("a server of an npm install run by its path (node node_modules/@scope/server/dist/index.js): the dependencies npm hoisted beside it are readable", async () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-raw-hoisted-" }));
  const modules = join(dir, "node_modules");
  const pkg = join(modules, "@acme", "server");
  Deno.mkdirSync(join(pkg, "dist"), { recursive: true });
  Deno.mkdirSync(join(modules, "acme-dep"));
  Deno.writeTextFileSync(join(pkg, "package.json"), '{ "name": "@acme/server", "type": "module" }');
  Deno.writeTextFileSync(
    join(modules, "acme-dep", "package.json"),
    '{ "name": "acme-dep", "type": "module", "main": "index.js" }',
  );
  Deno.writeTextFileSync(join(modules, "acme-dep", "index.js"), "export const ok = true;\n");
  const script = join(pkg, "dist", "index.js");
  Deno.writeTextFileSync(
    script,
    `import { ok } from "acme-dep";\nif (!ok) throw new Error("no dep");\n${
      Deno.readTextFileSync(FIXTURE)
    }`,
  );
  try {
    await using ws = workspace({ command: "node", args: [script] });
    await using g = await gatewayFor(ws, { elicit: () => "yes" });
    const tools = await (g.gateway.target("stdio") as StdioTarget).pinServer("raw");
    assertEquals(tools.map((t) => t.name), ["ask"]);
    const r = await g.client.callTool({ name: "raw__ask", arguments: { prompt: "hoisted" } });
    assertEquals(textOf(r), "hoisted");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a runtime that is not on the PATH is said at once, in PML's words", async () => {
  await using ws = workspace({ command: "uvx-not-installed-here", args: ["mcp-server-time"] });
  await using g = await gatewayFor(ws, { elicit: () => "yes" });
  const r = await g.client.callTool({ name: "raw__now", arguments: {} });
  assert(r.isError);
  assertStringIncludes(textOf(r), '"uvx-not-installed-here" is not on the PATH pml runs with');
  assert(!textOf(r).includes("bwrap"), textOf(r));
});

Deno.test("a script that is not there: the message names the file and the read grant, not the sandbox's command line", async () => {
  await using ws = workspace({ command: "node", args: ["/nonexistent-pml-test/server.mjs"] });
  await using g = await gatewayFor(ws, { elicit: () => "yes" });
  const r = await g.client.callTool({ name: "raw__x", arguments: {} });
  assert(r.isError);
  const text = textOf(r);
  assertStringIncludes(text, 'Cannot start raw ("node /nonexistent-pml-test/server.mjs")');
  assertStringIncludes(text, 'it needs read access to "/nonexistent-pml-test/server.mjs"');
  assertStringIncludes(text, "permissions.read");
  assert(!text.includes("--ro-bind"), text);
});
