/**
 * End to end: `bin/pml stdio` spawned and driven by the official SDK client over stdio, as Claude
 * Code or Cursor would.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { childPids, connectStdio, PML_BIN, pmlEnv, processAlive, runPml } from "./_spawn.ts";

const text = (r: unknown) =>
  ((r as { content: { text?: string }[] }).content ?? []).map((c) => c.text ?? "").join("");

const PERMS = {
  permissions: {
    allow: ["filesystem:read_file", "filesystem:list_directory", "filesystem:search_files"],
    ask: ["filesystem:write_file", "filesystem:edit_file"],
    deny: ["shell"],
  },
};

Deno.test("e2e stdio: list, read and write inside the workspace", async () => {
  await using ws = tempWorkspace(PERMS);
  ws.write("src/hello.txt", "hello from the workspace");
  await using client = await connectStdio(ws, { elicit: () => "yes" });
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  for (const n of ["pml__continue", "filesystem__read_file", "filesystem__write_file"]) {
    assert(names.includes(n), n);
  }
  assert(!names.includes("shell__exec"));
  const read = await client.callTool({
    name: "filesystem__read_file",
    arguments: { path: "src/hello.txt" },
  });
  assertEquals(text(read), "hello from the workspace");
  const write = await client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "out/new.txt", content: "written" },
  });
  assert(write.isError, "parent directory does not exist yet");
  const write2 = await client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "src/new.txt", content: "written" },
  });
  assert(!write2.isError, text(write2));
  assertEquals(ws.read("src/new.txt"), "written");
  const found = await client.callTool({
    name: "filesystem__search_files",
    arguments: { path: ".", pattern: "*.txt" },
  });
  assertStringIncludes(text(found), "src/hello.txt");
});

Deno.test("e2e stdio: ../, absolute and symlink escapes are refused and audited", async () => {
  await using ws = tempWorkspace(PERMS);
  const secret = join(ws.root, "secret.txt");
  Deno.writeTextFileSync(secret, "TOP-SECRET");
  Deno.symlinkSync(ws.root, join(ws.dir, "up"));
  Deno.symlinkSync(secret, join(ws.dir, "notes.txt"));
  await using client = await connectStdio(ws, { elicit: () => "yes" });
  for (
    const [name, args] of [
      ["filesystem__read_file", { path: "../secret.txt" }],
      ["filesystem__read_file", { path: secret }],
      ["filesystem__read_file", { path: "/etc/passwd" }],
      ["filesystem__read_file", { path: "up/secret.txt" }],
      ["filesystem__read_file", { path: "notes.txt" }],
      ["filesystem__list_directory", { path: ".." }],
      ["filesystem__write_file", { path: "up/planted.txt", content: "x" }],
      ["filesystem__write_file", { path: "../planted.txt", content: "x" }],
    ] as const
  ) {
    const r = await client.callTool({ name, arguments: args });
    assert(r.isError, `${name} ${JSON.stringify(args)}`);
    assertStringIncludes(text(r), "outside the workspace");
    assert(!text(r).includes("TOP-SECRET"));
  }
  assertEquals([...Deno.readDirSync(ws.root)].some((e) => e.name === "planted.txt"), false);
  const audit = ws.read(".pml/audit.log").trim().split("\n").map((l) => JSON.parse(l));
  assertEquals(audit.filter((a) => a.event === "path_blocked").length, 8);
});

/** Runs `bin/pml` once in the workspace, as the human would in a terminal. */
const pmlCli = (ws: { dir: string; home: string }, ...args: string[]) => runPml(ws, args);

Deno.test("e2e stdio: deny honoured; a write waits for the human: the agent's pml:continue is refused, `pml approve --always` in a terminal lets it run, always persisted", async () => {
  await using ws = tempWorkspace(PERMS);
  await using client = await connectStdio(ws);
  const denied = await client.callTool({
    name: "shell:exec",
    arguments: { command: "touch owned" },
  });
  assert(denied.isError);
  assertStringIncludes(text(denied), "Permission denied");

  const pending = await client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "a.txt", content: "A" },
  });
  const body = pending.structuredContent as Record<string, string>;
  assertEquals(body.status, "approval_required");
  assertEquals(body.approval_mode, "human");
  assertEquals(body.approval_url, undefined, "no link in the agent's hands");
  assertStringIncludes(body.message, `pml approve ${body.workflow_id}`);
  const early = await client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: body.workflow_id, decision: "always" },
  });
  assertStringIncludes(text(early), "waiting for a human");
  assertStringIncludes(text(early), body.workflow_id);
  assert(!/http:|token/.test(JSON.stringify(early)), JSON.stringify(early));
  assert(!(await Deno.stat(join(ws.dir, "a.txt")).catch(() => false)), "not written by the agent");

  // The human, in a terminal, while pml stdio runs.
  const listed = await pmlCli(ws, "approvals");
  assertEquals(listed.code, 0, listed.stderr);
  assertStringIncludes(listed.stdout, body.workflow_id);
  const approved = await pmlCli(ws, "approve", "--always", body.workflow_id);
  assertEquals(approved.code, 0, approved.stderr);

  const cont = await client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: body.workflow_id, decision: "no" },
  });
  assert(!cont.isError, text(cont));
  assertEquals(ws.read("a.txt"), "A");
  assert(JSON.parse(ws.read(".pml.json")).permissions.allow.includes("filesystem:write_file"));
  const direct = await client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "a.txt", content: "B" },
  });
  assert(!direct.isError);
  assertEquals(ws.read("a.txt"), "B");
});

Deno.test("e2e stdio: a pending approval survives a pml restart; pml deny in a terminal refuses it", async () => {
  await using ws = tempWorkspace(PERMS);
  const ask = async (client: Awaited<ReturnType<typeof connectStdio>>, path: string) =>
    (await client.callTool({
      name: "filesystem__write_file",
      arguments: { path, content: path },
    })).structuredContent as Record<string, string>;
  let kept: string;
  let refused: string;
  {
    await using first = await connectStdio(ws);
    kept = (await ask(first, "kept.txt")).workflow_id;
    refused = (await ask(first, "refused.txt")).workflow_id;
  }
  // The client restarted the server: the approvals are still listed and can be decided.
  assertStringIncludes((await pmlCli(ws, "approvals")).stdout, kept);
  assertEquals((await pmlCli(ws, "approve", kept)).code, 0);
  assertEquals((await pmlCli(ws, "deny", refused)).code, 0);
  await using second = await connectStdio(ws);
  const done = await second.callTool({
    name: "pml__continue",
    arguments: { workflow_id: kept, decision: "yes" },
  });
  assert(!done.isError, text(done));
  assertEquals(ws.read("kept.txt"), "kept.txt");
  const no = await second.callTool({
    name: "pml__continue",
    arguments: { workflow_id: refused, decision: "yes" },
  });
  assert(no.isError);
  assertStringIncludes(text(no), "the user refused");
  assert(!(await Deno.stat(join(ws.dir, "refused.txt")).catch(() => false)));
});

Deno.test("e2e stdio: ask through elicitation", async () => {
  await using ws = tempWorkspace(PERMS);
  ws.write("e.txt", "old text here");
  const asked: string[] = [];
  await using client = await connectStdio(ws, {
    elicit: (m) => (asked.push(m), "yes"),
  });
  const r = await client.callTool({
    name: "filesystem__edit_file",
    arguments: { path: "e.txt", edits: [{ oldText: "old", newText: "new" }] },
  });
  assert(!r.isError, text(r));
  assertEquals(ws.read("e.txt"), "new text here");
  assertEquals(asked.length, 1);
  assertStringIncludes(asked[0], "filesystem:edit_file");
});

async function readLines(stream: ReadableStream<Uint8Array>, lines: string[]) {
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of stream) {
    buf += decoder.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  }
}

async function waitFor(lines: string[], count: number) {
  for (let i = 0; i < 400 && lines.length < count; i++) await new Promise((r) => setTimeout(r, 25));
  assert(
    lines.length >= count,
    `expected ${count} lines, got ${lines.length}: ${lines.join("\n")}`,
  );
}

Deno.test("e2e stdio: malformed input gets JSON-RPC errors, the server keeps serving, stdout is JSON-RPC only, exit leaves no child", async () => {
  await using ws = tempWorkspace(PERMS);
  ws.write("f.txt", "F");
  const child = new Deno.Command(PML_BIN, {
    args: ["stdio"],
    cwd: ws.dir,
    env: pmlEnv(ws),
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines: string[] = [];
  const reading = readLines(child.stdout, lines);
  const writer = child.stdin.getWriter();
  const send = (s: string) => writer.write(new TextEncoder().encode(s + "\n"));

  await send("this is not json");
  await waitFor(lines, 1);
  assertEquals(JSON.parse(lines[0]).error.code, -32700);

  await send(JSON.stringify({ hello: "world" }));
  await waitFor(lines, 2);
  assertEquals(JSON.parse(lines[1]).error.code, -32600);
  // JSON-RPC 2.0 on its face, but neither a request, a notification nor a response.
  await send(JSON.stringify({ jsonrpc: "2.0", id: 9, method: 42 }));
  await waitFor(lines, 3);
  assertEquals(JSON.parse(lines.splice(2, 1)[0]).error.code, -32600);

  await send(JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "raw", version: "1" },
    },
  }));
  await waitFor(lines, 3);
  assertEquals(JSON.parse(lines[2]).result.serverInfo.name, "pml");
  await send(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
  await send(JSON.stringify({
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "filesystem__read_file", arguments: { path: "f.txt" } },
  }));
  await waitFor(lines, 4);
  assertEquals(JSON.parse(lines[3]).result.content[0].text, "F");
  await send(JSON.stringify({ jsonrpc: "2.0", id: 3, method: "no/such_method" }));
  await waitFor(lines, 5);
  assertEquals(JSON.parse(lines[4]).error.code, -32601);
  for (const line of lines) assertEquals(JSON.parse(line).jsonrpc, "2.0");

  const sandboxes = childPids(child.pid);
  assert(sandboxes.length >= 1, "a warm sandbox process runs");
  await writer.close();
  const status = await child.status;
  await reading;
  assertEquals(status.code, 0);
  for (const pid of sandboxes) assert(!processAlive(pid), `sandbox ${pid} outlived pml`);
});

Deno.test("e2e stdio: SIGKILL of pml leaves no sandbox behind (they exit on stdin EOF)", async () => {
  await using ws = tempWorkspace(PERMS);
  ws.write("f.txt", "F");
  const client = await connectStdio(ws);
  await client.callTool({ name: "filesystem__read_file", arguments: { path: "f.txt" } });
  // deno-lint-ignore no-explicit-any
  const pid = (client.transport as any)?.pid as number;
  const sandboxes = childPids(pid);
  assert(sandboxes.length >= 1);
  Deno.kill(pid, "SIGKILL");
  for (let i = 0; i < 200 && sandboxes.some(processAlive); i++) {
    await new Promise((r) => setTimeout(r, 25));
  }
  for (const p of sandboxes) assert(!processAlive(p), `sandbox ${p} survived SIGKILL of pml`);
  await client.close().catch(() => {});
});

Deno.test("e2e stdio: an invalid .pml.json answers initialize and names the file, field and expectation on every call", async () => {
  await using ws = tempWorkspace();
  ws.write(".pml.json", JSON.stringify({ permissions: { allow: "filesystem" } }));
  await using client = await connectStdio(ws);
  const { tools } = await client.listTools();
  assertEquals(tools.map((t) => t.name), ["pml__config_error"]);
  assertStringIncludes(tools[0].description ?? "", ".pml.json");
  for (const name of ["pml__config_error", "filesystem__read_file"]) {
    const r = await client.callTool({ name, arguments: { path: "x" } });
    assert(r.isError);
    assertStringIncludes(text(r), ".pml.json");
    assertStringIncludes(text(r), "permissions.allow");
    assertStringIncludes(text(r), "expected array");
  }
  assertStringIncludes(client.getInstructions() ?? "", "PML is not running");
});
