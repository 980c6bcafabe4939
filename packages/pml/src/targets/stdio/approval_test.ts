/**
 * The questions around a stdio dependency's first use, through the SDK client and the real
 * gateway: an `ask` tool is asked once, naming the tool and what will be installed; an allowed
 * tool's first install is asked once, showing package, version, integrity and grants.
 */
import { assert, assertEquals, assertStringIncludes } from "../../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../testing/workspace.ts";
import { NpmInstaller } from "../../deps/installer.ts";
import { catalogueEntry, pidsWith } from "./_testing.ts";

const stdio = { installer: new NpmInstaller({ env: Deno.env.toObject() }) };
const PKG = catalogueEntry("memory").package as {
  name: string;
  version: string;
  integrity: string;
};

function assertNamesInstall(question: string) {
  assertStringIncludes(question, `memory@${PKG.version}`);
  assertStringIncludes(question, `npm package ${PKG.name}@${PKG.version}`);
  assertStringIncludes(question, `integrity ${PKG.integrity}`);
  assertStringIncludes(question, "writes its package folder; no network");
}

Deno.test("ask tool with a dependency to install: one question names the tool and the install", async () => {
  await using ws = tempWorkspace({ permissions: { allow: [], ask: ["memory"], deny: [] } });
  const asked: string[] = [];
  await using g = await gatewayFor(ws, { stdio, elicit: (m) => (asked.push(m), "yes") });
  const r = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
  assert(!r.isError, textOf(r));
  assertStringIncludes(textOf(r), "entities");
  assertEquals(asked.length, 1, asked.join("\n---\n"));
  assertStringIncludes(asked[0], `Allow "memory:read_graph" to run? Its first use installs`);
  assertNamesInstall(asked[0]);
  assertEquals(JSON.parse(ws.read(".pml/deps.json")).installed.memory.integrity, PKG.integrity);

  // Installed: the next call of the ask tool is the tool's own question only.
  const again = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
  assert(!again.isError, textOf(again));
  assertEquals(asked.length, 2);
  assertEquals(asked[1], `Allow "memory:read_graph" to run?`);
});

Deno.test("ask tool with a dependency, without elicitation: one approval_required, pml:continue installs and runs", async () => {
  await using ws = tempWorkspace({
    approvals: "agent",
    permissions: { allow: [], ask: ["memory"], deny: [] },
  });
  await using g = await gatewayFor(ws, { stdio });
  const first = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
  const body = first.structuredContent as Record<string, unknown>;
  assertEquals(body.status, "approval_required");
  assertEquals(body.approval_type, "tool_permission");
  assertNamesInstall(body.description as string);
  const dependency = (body.context as { dependency: { package: unknown } }).dependency;
  assertEquals(dependency.package, PKG);
  const done = await g.client.callTool({
    name: "pml:continue",
    arguments: { workflow_id: body.workflow_id, decision: "yes" },
  });
  assert(!done.isError, textOf(done));
  assertEquals(
    (done.structuredContent as { status?: string } | undefined)?.status,
    undefined,
    textOf(done),
  );
  assertStringIncludes(textOf(done), "entities");
  assertEquals(g.gateway.pendingApprovals, 0);
});

Deno.test("ask tool with a dependency: 'no' to the one question installs nothing", async () => {
  await using ws = tempWorkspace({ permissions: { allow: [], ask: ["memory"], deny: [] } });
  const asked: string[] = [];
  await using g = await gatewayFor(ws, { stdio, elicit: (m) => (asked.push(m), "no") });
  const r = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
  assert(r.isError);
  assertEquals(asked.length, 1);
  assertEquals(pidsWith(ws.dir).length, 0);
  let installed = true;
  try {
    Deno.statSync(`${ws.dir}/.pml/deps.json`);
  } catch {
    installed = false;
  }
  assertEquals(installed, false);
});

Deno.test("allowed tool: its first install is asked once, with package, version, integrity and grants", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: ["memory"], ask: [], deny: [] },
    sandbox: { net: ["127.0.0.1:9"] },
  });
  const asked: string[] = [];
  await using g = await gatewayFor(ws, { stdio, elicit: (m) => (asked.push(m), "yes") });
  const r = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
  assert(!r.isError, textOf(r));
  assertEquals(asked.length, 1);
  assert(asked[0].startsWith(`Install memory@${PKG.version} (`), asked[0]);
  assertStringIncludes(asked[0], `npm package ${PKG.name}@${PKG.version}`);
  assertStringIncludes(asked[0], `integrity ${PKG.integrity}`);
  // .pml.json sandbox.net is part of the grant, shown, and what the server runs with.
  assertStringIncludes(asked[0], "network to 127.0.0.1:9 only");
  const [server] = pidsWith(ws.dir);
  const argv = Deno.readTextFileSync(`/proc/${server}/cmdline`).split("\0");
  assert(argv.includes("--allow-net=127.0.0.1:9"), argv.join(" "));
  const again = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
  assert(!again.isError, textOf(again));
  assertEquals(asked.length, 1, "asked once");
});
