import { assert, assertEquals, assertMatch } from "../testing/assert.ts";
import { gatewayFor, tempWorkspace } from "../testing/workspace.ts";
import { callJson, execute } from "./_test_helpers.ts";

// shell:exec appends a line to log.txt (a side effect that must happen once); write_file asks.
const PERMS = {
  approvals: "agent",
  permissions: {
    allow: ["shell:exec", "filesystem:read_file"],
    ask: ["filesystem:write_file"],
    deny: [],
  },
};
const CODE = `
  await mcp.shell.exec({ command: "echo before >> log.txt" });
  const seen = await mcp.filesystem.read_file({ path: "log.txt" });
  await mcp.filesystem.write_file({ path: "out.txt", content: seen });
  await mcp.shell.exec({ command: "echo after >> log.txt" });
  return await mcp.filesystem.read_file({ path: "log.txt" });`;

function exists(ws: { read(rel: string): string }, rel: string): boolean {
  try {
    ws.read(rel);
    return true;
  } catch {
    return false;
  }
}

Deno.test("pml:execute approval: pauses on ask; pml:continue replays completed calls, no repeat", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const paused = await execute(g.client, CODE);
  assertEquals([paused.isError, paused.status, paused.approval_type], [
    false,
    "approval_required",
    "tool_permission",
  ]);
  assertMatch(paused.description!, /pml:execute paused at mcp call #3: .*filesystem:write_file/);
  assertEquals((paused.context as { tool: string }).tool, "filesystem:write_file");
  assertEquals(ws.read("log.txt"), "before\n");
  assert(!exists(ws, "out.txt"));

  const done = await callJson(g.client, "pml__continue", {
    workflow_id: paused.workflow_id,
    decision: "yes",
  });
  assertEquals([done.isError, done.status], [false, "success"], JSON.stringify(done));
  assertEquals(done.result, "before\nafter\n");
  assertEquals(ws.read("log.txt"), "before\nafter\n");
  assertEquals(ws.read("out.txt"), "before\n");
  assertEquals(done.calls?.map((c) => [c.tool, c.replayed === true]), [
    ["shell:exec", true],
    ["filesystem:read_file", true],
    ["filesystem:write_file", false],
    ["shell:exec", false],
    ["filesystem:read_file", false],
  ]);
  // "yes" covers that call only: the next execution asks again.
  const again = await execute(g.client, CODE);
  assertEquals(again.status, "approval_required");
  assertEquals(ws.read("log.txt"), "before\nafter\nbefore\n");
});

Deno.test("pml:execute approval: a second ask pauses again, journal carried over", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const code = `
    await mcp.shell.exec({ command: "echo 1 >> log.txt" });
    await mcp.filesystem.write_file({ path: "a.txt", content: "a" });
    await mcp.shell.exec({ command: "echo 2 >> log.txt" });
    await mcp.filesystem.write_file({ path: "b.txt", content: "b" });
    await mcp.shell.exec({ command: "echo 3 >> log.txt" });
    return "done";`;
  const first = await execute(g.client, code);
  assertEquals(first.status, "approval_required");
  const second = await callJson(g.client, "pml__continue", {
    workflow_id: first.workflow_id,
    decision: "yes",
  });
  assertEquals(second.status, "approval_required");
  assertMatch(second.description!, /call #4/);
  assertEquals(ws.read("log.txt"), "1\n2\n");
  const done = await callJson(g.client, "pml__continue", {
    workflow_id: second.workflow_id,
    decision: "yes",
  });
  assertEquals([done.status, done.result], ["success", "done"]);
  assertEquals(ws.read("log.txt"), "1\n2\n3\n");
  assertEquals([ws.read("a.txt"), ws.read("b.txt")], ["a", "b"]);
});

Deno.test("pml:execute approval: 'always' persists the tool in .pml.json", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const paused = await execute(g.client, CODE);
  const done = await callJson(g.client, "pml__continue", {
    workflow_id: paused.workflow_id,
    decision: "always",
  });
  assertEquals(done.status, "success");
  assert(JSON.parse(ws.read(".pml.json")).permissions.allow.includes("filesystem:write_file"));
  const next = await execute(g.client, CODE);
  assertEquals(next.status, "success");
});

Deno.test("pml:execute approval: denial aborts with PERMISSION_DENIED and runs nothing more", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const paused = await execute(g.client, CODE);
  const denied = await callJson(g.client, "pml__continue", {
    workflow_id: paused.workflow_id,
    decision: "no",
  });
  assertEquals([denied.isError, denied.status, denied.code], [true, "error", "PERMISSION_DENIED"]);
  assertMatch(denied.message!, /refused .*filesystem:write_file/);
  assertEquals(ws.read("log.txt"), "before\n");
  assert(!exists(ws, "out.txt"));
  assertMatch(ws.read(".pml/audit.log"), /permission_denied.*filesystem:write_file/);
  const twice = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: paused.workflow_id, decision: "yes" },
  });
  assertEquals(twice.isError, true);
  assert(!exists(ws, "out.txt"));
});

Deno.test("pml:execute approval: with elicitation the nested call asks in-line", async () => {
  await using ws = tempWorkspace(PERMS);
  const asked: string[] = [];
  await using g = await gatewayFor(ws, {
    elicit: (m) => (asked.push(m), m.includes("write_file") ? "yes" : "no"),
  });
  const done = await execute(g.client, CODE);
  assertEquals([done.status, done.result], ["success", "before\nafter\n"]);
  assertEquals(asked.length, 1);
  assertEquals(ws.read("log.txt"), "before\nafter\n");

  await using ws2 = tempWorkspace(PERMS);
  await using g2 = await gatewayFor(ws2, { elicit: () => "no" });
  const refused = await execute(g2.client, CODE);
  assertEquals([refused.isError, refused.code], [true, "PERMISSION_DENIED"]);
  assertEquals(ws2.read("log.txt"), "before\n");
});
