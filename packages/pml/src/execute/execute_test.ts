import { existsSync } from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, assertMatch } from "../testing/assert.ts";
import { FILESYSTEM_ALLOWED, gatewayFor, tempWorkspace } from "../testing/workspace.ts";
import { callJson, execSandboxPids, execute, processExists } from "./_test_helpers.ts";

const PERMS = {
  permissions: {
    allow: ["filesystem:read_file", "filesystem:list_directory", "shell:exec"],
    ask: [],
    deny: ["filesystem:write_file"],
  },
};

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("pml:execute runs client-only code locally: reads workspace files, returns calls", async () => {
  await using ws = tempWorkspace(PERMS);
  ws.write("a.txt", "alpha");
  ws.write("b.txt", "beta");
  await using g = await gatewayFor(ws);
  const body = await execute(
    g.client,
    `const a = await mcp.filesystem.read_file({ path: "a.txt" });
     const b = await mcp.filesystem.read_file({ path: "b.txt" });
     return { joined: a + "+" + b };`,
  );
  assertEquals(body.isError, false);
  assertEquals(body.status, "success");
  assertEquals(body.result, { joined: "alpha+beta" });
  assertEquals(body.calls?.map((c) => [c.tool, c.routing]), [
    ["filesystem:read_file", "client"],
    ["filesystem:read_file", "client"],
  ]);
  assert(body.calls!.every((c) => typeof c.ms === "number"));
});

Deno.test("pml:execute is listed and undefined results become null", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const tools = await g.client.listTools();
  assert(tools.tools.some((t) => t.name === "pml__execute"));
  const body = await execute(g.client, "const x = 1;");
  assertEquals([body.status, body.result, body.calls], ["success", null, []]);
});

Deno.test("pml:execute: empty code and syntax errors are refused before any sandbox runs", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws, { execute: { keepWarm: false } });
  const empty = await execute(g.client, "  \n ");
  assertEquals([empty.isError, empty.status, empty.code], [true, "error", "EMPTY_CODE"]);
  const syntax = await execute(g.client, "return (1 + ;");
  assertEquals([syntax.isError, syntax.code], [true, "SYNTAX_ERROR"]);
  assertEquals(syntax.line, 1);
  assertEquals(execSandboxPids(), []);
});

Deno.test("pml:execute: an endless loop is killed at timeout_ms and its process is gone", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws, { execute: { keepWarm: false } });
  const pending = execute(g.client, "while (true) {}", { timeout_ms: 1500 });
  let pid: number | undefined;
  while (pid === undefined) {
    pid = execSandboxPids()[0];
    await new Promise((r) => setTimeout(r, 20));
  }
  const body = await pending;
  assertEquals([body.isError, body.code], [true, "EXECUTION_TIMEOUT"]);
  assertMatch(body.message!, /1500 ms/);
  assert(!processExists(pid), `sandbox ${pid} still exists`);
  assertEquals(execSandboxPids(), []);
});

Deno.test("pml:execute: a call that hangs fails with RPC_TIMEOUT, catchable by the code", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws, { execute: { rpcTimeoutMs: 300 } });
  const body = await execute(g.client, `await mcp.shell.exec({ command: "sleep 2" });`);
  assertEquals([body.isError, body.code], [true, "RPC_TIMEOUT"]);
  assertMatch(body.message!, /mcp\.shell\.exec\(\) did not answer within 300 ms/);
  const caught = await execute(
    g.client,
    `try { await mcp.shell.exec({ command: "sleep 2" }); } catch (e) { return e.code; }`,
  );
  assertEquals(caught.result, "RPC_TIMEOUT");
});

Deno.test("pml:execute: unknown tools, denied tools and thrown errors have their codes", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const unknown = await execute(g.client, `return await mcp.nosuch.thing({});`);
  assertEquals([unknown.isError, unknown.code], [true, "UNKNOWN_TOOL"]);
  assertMatch(unknown.message!, /nosuch:thing/);
  const denied = await execute(
    g.client,
    `await mcp.filesystem.write_file({ path: "x.txt", content: "x" });`,
  );
  assertEquals([denied.isError, denied.code], [true, "PERMISSION_DENIED"]);
  assertMatch(denied.message!, /filesystem:write_file/);
  assert(!ws.read(".pml/audit.log").includes('"x.txt"'));
  assertMatch(ws.read(".pml/audit.log"), /permission_denied.*filesystem:write_file/);
  const thrown = await execute(g.client, `throw new RangeError("bad " + 42);`);
  assertEquals([thrown.isError, thrown.code, thrown.message], [
    true,
    "CODE_ERROR",
    "RangeError: bad 42",
  ]);
  const toolError = await execute(
    g.client,
    `return await mcp.filesystem.read_file({ path: "no.txt" });`,
  );
  assertEquals(toolError.code, "CODE_ERROR");
  assertMatch(toolError.message!, /no\.txt/);
});

Deno.test("pml:execute: bad arguments, its own or a nested call's, are INVALID_ARGUMENTS naming the value", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const own = await callJson(g.client, "pml__execute", { code: 42 });
  assertEquals([own.isError, own.code], [true, "INVALID_ARGUMENTS"]);
  assertMatch(own.message!, /code must be a string .*got 42/);
  const timeout = await execute(g.client, "return 1", { timeout_ms: "soon" });
  assertEquals([timeout.code, timeout.message], [
    "INVALID_ARGUMENTS",
    'Invalid arguments for "pml:execute": timeout_ms must be a positive number, got "soon"',
  ]);
  for (const args of ["{}", "{ path: 5 }"]) {
    const nested = await execute(g.client, `return await mcp.filesystem.read_file(${args});`);
    assertEquals([nested.isError, nested.code], [true, "INVALID_ARGUMENTS"], nested.message);
    assertMatch(
      nested.message!,
      /Invalid arguments for "filesystem:read_file": .*non-empty string/,
    );
  }
  // Called directly, the same answer with the same code.
  const direct = await g.client.callTool({ name: "filesystem__read_file", arguments: {} });
  assertEquals(direct.isError, true);
  assertEquals((direct.structuredContent as { code?: string }).code, "INVALID_ARGUMENTS");
  // The ordinary call beside it still works.
  ws.write("ok.txt", "fine");
  const ok = await execute(g.client, `return await mcp.filesystem.read_file({ path: "ok.txt" });`);
  assertEquals(ok.result, "fine");
});

Deno.test("pml:execute: each execution gets a fresh sandbox, never reused; one stays warm", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  // Code sees its own pid namespace where the OS sandbox runs (Deno.pid is the same in each):
  // compare the host's view, and that no global survives from one execution to the next.
  const code = "const seen = globalThis.__mark ?? null; globalThis.__mark = 1; return seen;";
  // Generous bounds: they only keep a failure from hanging (a loaded machine is slow, not wrong).
  const gone = async (pids: number[]) => {
    for (const pid of pids) {
      for (let i = 0; i < 500 && processExists(pid); i++) await delay(20);
      assert(!processExists(pid), `sandbox ${pid} still exists`);
    }
  };
  const first = await execute(g.client, code);
  // Killed at the end of each execution (right after its result is sent, reaped asynchronously);
  // its exit starts the next one.
  const ran = execSandboxPids();
  await gone(ran);
  // One read per look: a process's command line reads empty while it `exec`s (the next one's
  // `sh` becoming bubblewrap), so a second look could miss the process the first one saw.
  let warm = execSandboxPids();
  for (let i = 0; i < 1500 && warm.length === 0; i++) {
    await delay(20);
    warm = execSandboxPids();
  }
  assertEquals(warm.length, 1, `the next sandbox is kept warm (ran in ${ran}, now ${warm})`);
  const second = await execute(g.client, code);
  assertEquals([first.result, second.result], [null, null], "a sandbox was reused");
  await gone(warm);
  await g.gateway.close();
  assertEquals(execSandboxPids(), []);
});

Deno.test("pml:execute: a call the code leaves running after it returned is never made", async () => {
  await using ws = tempWorkspace(FILESYSTEM_ALLOWED);
  await using g = await gatewayFor(ws);
  const body = await execute(
    g.client,
    `setTimeout(() => mcp.filesystem.write_file({ path: "late.txt", content: "late" }), 0);
     return "returned";`,
  );
  assertEquals(body.result, "returned");
  await delay(300);
  assertEquals(existsSync(join(ws.dir, "late.txt")), false);
});

Deno.test("pml:execute: code the analysis refuses is never run, even code the sandbox would run", async () => {
  await using ws = tempWorkspace(FILESYSTEM_ALLOWED);
  await using g = await gatewayFor(ws);
  // Valid as a sloppy-mode function body (the sandbox would run it), refused by the analysis,
  // which parses strict code: a legacy octal literal after a write.
  const body = await execute(
    g.client,
    `await mcp.filesystem.write_file({ path: "early.txt", content: "x" });
     return 010;`,
  );
  assertEquals(body.code, "SYNTAX_ERROR");
  await delay(200);
  assertEquals(existsSync(join(ws.dir, "early.txt")), false);
});
