import { join } from "node:path";
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../testing/workspace.ts";
import { pml } from "../../testing/cli.ts";
import { NpmInstaller } from "../../deps/installer.ts";
import { catalogueEntry, pidsWith } from "./_testing.ts";

/** Tests install as users do: from npm (its cache first), with the environment npm needs. */
const stdio = { installer: new NpmInstaller({ env: Deno.env.toObject() }) };
const MEMORY = catalogueEntry("memory");
const PKG = MEMORY.package as { name: string; version: string; integrity: string };

/**
 * memory as a `private_mcps` entry, without the catalogue's `${packageDir}` grants: the tests point
 * MEMORY_FILE_PATH into the workspace.
 */
function privateMemory(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    ...MEMORY,
    permissions: { read: [], write: [], net: [], env: ["MEMORY_FILE_PATH"] },
    ...overrides,
  };
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("memory: tools listed without starting it; approve → install (progress) → call → recorded", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["memory"], ask: [], deny: [] } });
  const asked: string[] = [];
  await using g = await gatewayFor(ws, { stdio, elicit: (m) => (asked.push(m), "yes") });
  const { tools } = await g.client.listTools();
  const create = tools.find((t) => t.name === "memory__create_entities");
  assert(create, "memory tools are listed from metadata");
  assertEquals(create.title, "memory:create_entities");
  assertEquals(pidsWith(ws.dir).length, 0, "listing starts nothing");

  const progress: string[] = [];
  const r = await g.client.callTool(
    {
      name: "memory:create_entities",
      arguments: { entities: [{ name: "pml", entityType: "project", observations: ["gateway"] }] },
    },
    undefined,
    { onprogress: (p) => void progress.push(p.message ?? "") },
  );
  assert(!r.isError, textOf(r));
  assertEquals(asked, [
    `Install memory@${PKG.version} (npm package ${PKG.name}@${PKG.version}, integrity ${PKG.integrity}; ` +
    `run under Deno with only these grants: reads its install folder, its package folder; ` +
    `writes its package folder; no network; environment MEMORY_FILE_PATH)?`,
  ]);
  assert(
    progress.some((m) => m.startsWith(`Installing ${PKG.name}@${PKG.version}`)),
    progress.join("|"),
  );
  assert(progress.some((m) => m.startsWith("Verifying")), progress.join("|"));

  const deps = JSON.parse(ws.read(".pml/deps.json"));
  assertEquals(deps.installed.memory.package, PKG.name);
  assertEquals(deps.installed.memory.version, PKG.version);
  assertEquals(deps.installed.memory.integrity, PKG.integrity);
  assertMatch(deps.installed.memory.installedAt, /^\d{4}-\d\d-\d\dT/);
  assertStringIncludes(ws.read(".pml/audit.log"), '"result":"verified"');

  const read = await g.client.callTool({ name: "memory__read_graph", arguments: {} });
  assertStringIncludes(textOf(read), '"name": "pml"');
  assertEquals(asked.length, 1, "an installed dependency of an allowed tool is not asked again");
  assertEquals(pidsWith(ws.dir).length, 1, "one process");
  // The running server annotates its own tools (`readOnlyHint` on read_graph): a third party's
  // hints are not passed on to the agent, whose client would act on them.
  const after = await g.client.listTools();
  assertEquals(after.tools.find((t) => t.name === "memory__read_graph")!.annotations, undefined);
});

Deno.test("memory: deny → nothing installed, nothing recorded, nothing started", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["memory"], ask: [], deny: [] } });
  await using g = await gatewayFor(ws, { stdio, elicit: () => "no" });
  const r = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
  assert(r.isError);
  assertStringIncludes(
    textOf(r),
    `Installation of memory@${PKG.version} refused: nothing was installed`,
  );
  assertEquals(exists(join(ws.dir, ".pml", "deps")), false);
  assertEquals(exists(join(ws.dir, ".pml", "deps.json")), false);
  assertEquals(pidsWith(ws.dir).length, 0);
});

Deno.test("memory: without elicitation the install waits for a human (pml approve), then pml:continue installs and runs", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["memory"], ask: [], deny: [] } });
  await using g = await gatewayFor(ws, { stdio, tell: () => {} });
  const first = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
  const body = first.structuredContent as Record<string, unknown>;
  assertEquals(body.status, "approval_required");
  assertEquals(body.approval_type, "dependency");
  assertEquals((body.context as { package: unknown }).package, PKG);
  assertEquals(body.approval_mode, "human", "installs are the human's by default");
  const early = await g.client.callTool({
    name: "pml:continue",
    arguments: { workflow_id: body.workflow_id, decision: "yes" },
  });
  assertEquals(
    (early.structuredContent as Record<string, unknown>).status,
    "waiting_for_human",
    textOf(early),
  );
  assertEquals(exists(join(ws.dir, ".pml", "deps.json")), false, "nothing installed yet");
  assertEquals((await pml(ws, "approve", String(body.workflow_id))).code, 0);
  const done = await g.client.callTool({
    name: "pml:continue",
    arguments: { workflow_id: body.workflow_id, decision: "yes" },
  });
  assert(!done.isError, textOf(done));
  assertStringIncludes(textOf(done), "entities");
});

Deno.test("tampered integrity: refused with expected and actual values, nothing installed or run", async () => {
  const tampered = "sha512-" + "A".repeat(86) + "==";
  await using ws = tempWorkspace({
    permissions: { allow: ["memory"], ask: [], deny: [] },
    private_mcps: { memory: privateMemory({ package: { ...PKG, integrity: tampered } }) },
  });
  await using g = await gatewayFor(ws, { stdio, elicit: () => "yes" });
  const r = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
  assert(r.isError);
  const text = textOf(r);
  assertStringIncludes(text, `Integrity check failed for ${PKG.name}@${PKG.version}`);
  assertStringIncludes(text, `expected ${tampered}`);
  assertStringIncludes(text, `got ${PKG.integrity}`);
  assertEquals((r.structuredContent as Record<string, unknown>).code, "INTEGRITY_MISMATCH");
  assertEquals(exists(join(ws.dir, ".pml", "deps", `memory@${PKG.version}`)), false);
  assertEquals([...Deno.readDirSync(join(ws.dir, ".pml", "deps"))].length, 0, "no staging left");
  assertEquals(exists(join(ws.dir, ".pml", "deps.json")), false);
  assertStringIncludes(ws.read(".pml/audit.log"), '"result":"refused"');
  assertEquals(pidsWith(ws.dir).length, 0);
});

Deno.test("installed package tampered on disk after install: refused before the next start", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["memory"], ask: [], deny: [] } });
  {
    await using g = await gatewayFor(ws, { stdio, elicit: () => "yes" });
    const r = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
    assert(!r.isError, textOf(r));
  }
  const lockPath = join(ws.dir, ".pml", "deps", `memory@${PKG.version}`, "package-lock.json");
  const forged = "sha512-" + "B".repeat(86) + "==";
  Deno.writeTextFileSync(lockPath, Deno.readTextFileSync(lockPath).replace(PKG.integrity, forged));
  await using g = await gatewayFor(ws, { stdio, elicit: () => "no" });
  const r = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
  assert(r.isError);
  assertStringIncludes(textOf(r), `expected ${PKG.integrity}, got ${forged}`);
  assertEquals(pidsWith(ws.dir).length, 0);
});

Deno.test("env: a missing required variable is a clear error; the process gets only declared variables", async () => {
  const everything = catalogueEntry("everything");
  await using ws = tempWorkspace({
    permissions: { allow: ["everything", "weather"], ask: [], deny: [] },
    private_mcps: {
      everything: {
        ...everything,
        permissions: { read: [], write: [], net: [], env: ["ALLOWED_VAR", "PML_API_KEY"] },
      },
      weather: privateMemory({
        install: { ...(MEMORY.install as object), envRequired: ["WEATHER_API_KEY"] },
      }),
    },
  });
  await using g = await gatewayFor(ws, {
    stdio,
    elicit: () => "yes",
    env: { ALLOWED_VAR: "visible", PML_API_KEY: "pml-secret", OTHER_SERVER_KEY: "other-secret" },
  });
  const missing = await g.client.callTool({ name: "weather:read_graph", arguments: {} });
  assert(missing.isError);
  assertStringIncludes(textOf(missing), "weather requires WEATHER_API_KEY");
  assertStringIncludes(textOf(missing), ".mcp.json");
  assertEquals((missing.structuredContent as Record<string, unknown>).code, "api_key_required");
  assertEquals(exists(join(ws.dir, ".pml", "deps.json")), false, "nothing installed for it");

  const env = await g.client.callTool({ name: "everything:get-env", arguments: {} });
  assert(!env.isError, textOf(env));
  assertEquals(JSON.parse(textOf(env)), { ALLOWED_VAR: "visible" });
});

Deno.test("env: a missing required variable of an ask tool is the answer before any question", async () => {
  const weather = privateMemory({
    install: { ...(MEMORY.install as object), envRequired: ["WEATHER_API_KEY"] },
  });
  await using ws = tempWorkspace({
    permissions: { allow: [], ask: ["weather"], deny: [] },
    private_mcps: { weather },
  });
  const asked: string[] = [];
  await using g = await gatewayFor(ws, { stdio, elicit: (m) => (asked.push(m), "yes") });
  const missing = await g.client.callTool({ name: "weather:read_graph", arguments: {} });
  assert(missing.isError);
  assertStringIncludes(textOf(missing), "weather requires WEATHER_API_KEY");
  assertEquals((missing.structuredContent as Record<string, unknown>).code, "api_key_required");
  assertEquals(asked, [], "nothing was asked");
  assertEquals(exists(join(ws.dir, ".pml", "approvals")), false, "nothing waits for a human");
});

Deno.test("filesystem server under Deno: works in the workspace; Deno's grants hold even if the server's own check would pass", async () => {
  const fs = catalogueEntry("filesystem");
  await using ws = tempWorkspace();
  const outside = join(ws.root, "outside.txt");
  Deno.writeTextFileSync(outside, "secret");
  ws.write(
    ".pml.json",
    JSON.stringify({
      permissions: { allow: ["files", "loose"], ask: [], deny: [] },
      private_mcps: {
        // The catalogue's own "filesystem" namespace belongs to the std tools.
        files: {
          ...fs,
          install: {
            ...(fs.install as object),
            args: [
              "-y",
              `${(fs.package as typeof PKG).name}@${(fs.package as typeof PKG).version}`,
              ws.dir,
            ],
          },
          permissions: { read: [ws.dir], write: [ws.dir] },
        },
        // The server is told it may use the whole temp root, but Deno only grants the workspace.
        loose: {
          ...fs,
          install: {
            ...(fs.install as object),
            args: [
              "-y",
              `${(fs.package as typeof PKG).name}@${(fs.package as typeof PKG).version}`,
              ws.root,
            ],
          },
          permissions: { read: [ws.dir], write: [ws.dir] },
        },
      },
    }),
  );
  ws.write("notes.txt", "hello from the workspace");
  await using g = await gatewayFor(ws, { stdio, elicit: () => "yes" });
  const read = await g.client.callTool({
    name: "files:read_text_file",
    arguments: { path: join(ws.dir, "notes.txt") },
  });
  assertEquals(textOf(read), "hello from the workspace");
  const written = await g.client.callTool({
    name: "files:write_file",
    arguments: { path: join(ws.dir, "out.txt"), content: "written" },
  });
  assert(!written.isError, textOf(written));
  assertEquals(ws.read("out.txt"), "written");
  const refused = await g.client.callTool({
    name: "files:read_text_file",
    arguments: { path: outside },
  });
  assert(refused.isError);
  assertStringIncludes(textOf(refused), "outside allowed directories");
  const sandboxed = await g.client.callTool({
    name: "loose:read_text_file",
    arguments: { path: outside },
  });
  assert(sandboxed.isError, textOf(sandboxed));
  assert(!textOf(sandboxed).includes("secret"));
  // Deno refuses the server even a look at the temp root, so it does not start at all.
  assertStringIncludes(textOf(sandboxed), `Cannot access directory ${ws.root}`);
});

Deno.test("private package without integrity: runs (development) with a loud warning in pml status and in every question", async () => {
  const { integrity: _, ...unpinned } = PKG;
  await using ws = tempWorkspace({
    permissions: { allow: [], ask: ["memory"], deny: [] },
    private_mcps: { memory: privateMemory({ package: unpinned }) },
  });
  const status = await pml(ws, "status");
  assertEquals(status.code, 0, status.stderr);
  assertStringIncludes(status.stdout, `!!! WARNING: memory installs ${PKG.name}@${PKG.version}`);
  assertStringIncludes(status.stdout, "NO pinned integrity");
  const json = JSON.parse((await pml(ws, "status", "--json")).stdout);
  assertEquals(json.warnings.length, 1);

  const asked: string[] = [];
  await using g = await gatewayFor(ws, { stdio, elicit: (m) => (asked.push(m), "yes") });
  for (let i = 0; i < 2; i++) {
    const r = await g.client.callTool({ name: "memory__read_graph", arguments: {} });
    assert(!r.isError, textOf(r));
    assertStringIncludes(textOf(r), "entities");
  }
  assertEquals(asked.length, 2, asked.join("\n"));
  for (const q of asked) assertStringIncludes(q, "NO pinned integrity");
  assertStringIncludes(asked[0], "integrity NOT PINNED");
  const deps = JSON.parse(ws.read(".pml/deps.json"));
  assertEquals(deps.installed.memory.integrity, PKG.integrity, "npm's integrity is recorded");
});

Deno.test("a registry's or the catalogue's stdio metadata without integrity is still refused", async () => {
  const { parseStdioMetadata } = await import("../../deps/metadata.ts");
  const { integrity: _, ...unpinned } = PKG;
  let message = "";
  try {
    parseStdioMetadata("memory", { ...MEMORY, package: unpinned }, "registry/mcp/memory.json");
  } catch (err) {
    message = (err as Error).message;
  }
  assertStringIncludes(message, 'field "package.integrity": required');
  const meta = parseStdioMetadata(
    "memory",
    { ...MEMORY, package: unpinned },
    ".pml.json private_mcps.memory",
  );
  assertEquals(meta.package?.integrity, undefined);
});
