import {
  assert,
  assertEquals,
  assertMatch,
  assertRejects,
  assertStringIncludes,
} from "../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../testing/workspace.ts";

const PERMS = {
  approvals: "agent",
  permissions: {
    allow: ["filesystem:read_file", "filesystem:list_directory"],
    ask: ["filesystem:write_file"],
    deny: ["shell"],
  },
};

Deno.test("tools/list: meta tools and the tools of named MCPs, exposed names, schemas", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const { tools } = await g.client.listTools();
  const names = tools.map((t) => t.name);
  assert(names.includes("pml__continue"));
  assert(names.includes("filesystem__read_file"));
  assert(names.includes("filesystem__move_file"), "every tool of a named MCP is listed");
  assert(!names.some((n) => n.startsWith("shell__")), "denied tools are not listed");
  for (const t of tools) assertMatch(t.name, /^[A-Za-z0-9_-]{1,64}$/);
  const read = tools.find((t) => t.name === "filesystem__read_file")!;
  assertEquals(read.inputSchema.required, ["path"]);
});

Deno.test("tools/list: std tools say whether they only read (readOnlyHint), for clients that run reads side by side", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem", "shell"], ask: [], deny: [] },
  });
  await using g = await gatewayFor(ws);
  const { tools } = await g.client.listTools();
  const hint = (name: string) => tools.find((t) => t.name === name)?.annotations?.readOnlyHint;
  for (const name of ["read_file", "list_directory", "search_files", "get_file_info"]) {
    assertEquals(hint(`filesystem__${name}`), true, name);
  }
  for (const name of ["filesystem__write_file", "filesystem__move_file", "shell__exec"]) {
    assertEquals(hint(name), false, name);
  }
  // Tools PML does not know the behaviour of carry none (pml:continue answers an approval).
  assertEquals(tools.find((t) => t.name === "pml__continue")!.annotations, undefined);
});

Deno.test("tools/call: by exposed name and by tool id", async () => {
  await using ws = tempWorkspace(PERMS);
  ws.write("a.txt", "hello");
  await using g = await gatewayFor(ws);
  const a = await g.client.callTool({
    name: "filesystem__read_file",
    arguments: { path: "a.txt" },
  });
  const b = await g.client.callTool({ name: "filesystem:read_file", arguments: { path: "a.txt" } });
  assertEquals(textOf(a), "hello");
  assertEquals(textOf(b), "hello");
});

Deno.test("tools/call: unknown tool is a JSON-RPC error", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  await assertRejects(
    () => g.client.callTool({ name: "nope__nothing", arguments: {} }),
    Error,
    "Unknown tool",
  );
});

Deno.test("deny: refused with a clear message and an audit line", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const r = await g.client.callTool({ name: "shell:exec", arguments: { command: "touch pwned" } });
  assert(r.isError);
  assertStringIncludes(textOf(r), "Permission denied");
  assertEquals([...Deno.readDirSync(ws.dir)].some((e) => e.name === "pwned"), false);
  assertStringIncludes(ws.read(".pml/audit.log"), '"event":"permission_denied"');
});

Deno.test("ask via elicitation: yes runs once, no refuses, decline refuses", async () => {
  await using ws = tempWorkspace(PERMS);
  const answers: ("yes" | "no" | "decline")[] = ["yes", "no", "decline"];
  const asked: string[] = [];
  await using g = await gatewayFor(ws, {
    elicit: (m) => {
      asked.push(m);
      return answers.shift()!;
    },
  });
  const call = (content: string) =>
    g.client.callTool({ name: "filesystem__write_file", arguments: { path: "out.txt", content } });
  const yes = await call("one");
  assert(!yes.isError, textOf(yes));
  assertEquals(ws.read("out.txt"), "one");
  const no = await call("two");
  assert(no.isError);
  assertStringIncludes(textOf(no), "refused");
  const declined = await call("three");
  assert(declined.isError);
  assertEquals(ws.read("out.txt"), "one");
  assertEquals(asked.length, 3);
  assertStringIncludes(asked[0], "filesystem:write_file");
});

Deno.test("ask via elicitation: always persists the exact tool id and stops asking", async () => {
  await using ws = tempWorkspace(PERMS);
  let asked = 0;
  await using g = await gatewayFor(ws, {
    elicit: () => {
      asked++;
      return "always";
    },
  });
  for (const content of ["1", "2"]) {
    const r = await g.client.callTool({
      name: "filesystem__write_file",
      arguments: { path: "o.txt", content },
    });
    assert(!r.isError, textOf(r));
  }
  assertEquals(asked, 1);
  const file = JSON.parse(ws.read(".pml.json"));
  assert(file.permissions.allow.includes("filesystem:write_file"));
  assertEquals(file.permissions.ask, []);
  assertEquals(file.permissions.deny, ["shell"], "other content is kept");
});

Deno.test("ask without elicitation: approval_required, then pml:continue runs exactly that call", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const r = await g.client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "x.txt", content: "approved" },
  });
  assert(!r.isError);
  const body = r.structuredContent as Record<string, unknown>;
  assertEquals(body.status, "approval_required");
  assertEquals(body.approval_type, "tool_permission");
  assertEquals(body.options, ["yes", "always", "no"]);
  assertEquals(JSON.parse(textOf(r)), body);
  assertEquals([...Deno.readDirSync(ws.dir)].some((e) => e.name === "x.txt"), false);

  const done = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: body.workflow_id, decision: "yes" },
  });
  assert(!done.isError, textOf(done));
  assertEquals(ws.read("x.txt"), "approved");

  const again = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: body.workflow_id, decision: "yes" },
  });
  assert(again.isError, "a workflow is answered once");
  assertStringIncludes(textOf(again), "No pending approval");
});

Deno.test("approval_required: no refuses, always persists, expired approvals are gone", async () => {
  await using ws = tempWorkspace(PERMS);
  let now = 0;
  await using g = await gatewayFor(ws, { now: () => now, approvalTtlMs: 1000 });
  const ask = async () =>
    (await g.client.callTool({
      name: "filesystem__write_file",
      arguments: { path: "y.txt", content: "z" },
    })).structuredContent as { workflow_id: string };
  const cont = (id: string, decision: string) =>
    g.client.callTool({ name: "pml__continue", arguments: { workflow_id: id, decision } });

  const no = await cont((await ask()).workflow_id, "no");
  assert(no.isError);
  assertStringIncludes(textOf(no), "refused");

  const expiring = await ask();
  now += 1001;
  const late = await cont(expiring.workflow_id, "yes");
  assert(late.isError);
  assertStringIncludes(textOf(late), "expired");

  const always = await cont((await ask()).workflow_id, "always");
  assert(!always.isError, textOf(always));
  assert(JSON.parse(ws.read(".pml.json")).permissions.allow.includes("filesystem:write_file"));
  const direct = await g.client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "y.txt", content: "again" },
  });
  assertEquals(direct.structuredContent, undefined);
  assertEquals(ws.read("y.txt"), "again");
});

Deno.test("pml:continue with bad input is a clear error", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const r = await g.client.callTool({ name: "pml__continue", arguments: { decision: "maybe" } });
  assert(r.isError);
  assertStringIncludes(textOf(r), "workflow_id");
});

Deno.test("path escapes are refused in the gateway and audited", async () => {
  await using ws = tempWorkspace(PERMS);
  Deno.writeTextFileSync(`${ws.root}/secret.txt`, "top secret");
  Deno.symlinkSync(`${ws.root}/secret.txt`, `${ws.dir}/innocent.txt`);
  await using g = await gatewayFor(ws);
  for (const path of ["../secret.txt", `${ws.root}/secret.txt`, "innocent.txt"]) {
    const r = await g.client.callTool({ name: "filesystem__read_file", arguments: { path } });
    assert(r.isError, path);
    assertStringIncludes(textOf(r), "outside the workspace");
    assert(!textOf(r).includes("top secret"));
  }
  const audit = ws.read(".pml/audit.log").trim().split("\n").map((l) => JSON.parse(l));
  assertEquals(audit.filter((a) => a.event === "path_blocked").length, 3);
});

Deno.test("arguments that are not an object are refused", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const r = await g.gateway.runTool("filesystem:read_file", [1, 2], {});
  assert(r.isError);
  assertStringIncludes(textOf(r), "must be a JSON object");
});
