/**
 * Real client, end to end: the MCP Inspector CLI (`mcp-inspector-cli --cli`, the pinned
 * devDependency) against `pml stdio` and `pml serve`. Each invocation is one MCP session that runs
 * one method (`tools/list` or `tools/call`) and prints the JSON result.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertMatch,
  assertStringIncludes,
} from "../../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../../packages/pml/src/testing/workspace.ts";
import { startCloud } from "../_cloud.ts";
import { cloudTools } from "./_cloud_tools.ts";
import { spawnServe } from "../_serve.ts";
import { PML_BIN, runPml } from "../_spawn.ts";
import { type EgressTrap, startEgressTrap } from "./_egress_trap.ts";

const ROOT = join(import.meta.dirname!, "..", "..", "..");
const INSPECTOR_BIN = join(ROOT, "node_modules", ".bin", "mcp-inspector-cli");
/**
 * Inspector CLI 1.0.3 checks `../package.json` relative to its working directory but imports it
 * relative to its own file: it starts only from a folder whose parent holds a package.json. Its
 * own `build` folder is such a place (the server's workspace comes from PML_WORKSPACE).
 */
const INSPECTOR_CWD = join(ROOT, "node_modules", "@modelcontextprotocol", "inspector-cli", "build");
const NO_UPSTREAM = "http://127.0.0.1:9";

interface ToolResult {
  content: { type: string; text?: string }[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}
interface ListedTool {
  name: string;
  description?: string;
  inputSchema: { type: string; properties?: Record<string, unknown>; required?: string[] };
}

/**
 * Runs `mcp-inspector-cli --cli` with `target` (a command, or a URL) and the method options.
 * `--tool-arg` pairs go before `--tool-name`: the CLI re-orders its arguments and a trailing
 * variadic option would swallow the target.
 */
async function inspector(
  target: string[],
  method: { list: true } | { tool: string; args?: Record<string, string> },
  o: { trap: EgressTrap; home: string; env?: Record<string, string> },
): Promise<{ code: number; json?: unknown; out: string }> {
  const env = Object.entries(o.env ?? {}).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
  const methodArgs = "list" in method ? ["--method", "tools/list"] : [
    "--method",
    "tools/call",
    ...Object.entries(method.args ?? {}).flatMap(([k, v]) => ["--tool-arg", `${k}=${v}`]),
    "--tool-name",
    method.tool,
  ];
  const isUrl = target[0].startsWith("http");
  const args = isUrl
    ? ["--cli", ...methodArgs, target[0], "--transport", "http"]
    : ["--cli", ...env, ...methodArgs, "--", ...target];
  const out = await new Deno.Command(INSPECTOR_BIN, {
    args,
    cwd: INSPECTOR_CWD,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: o.home,
      DENO_NO_UPDATE_CHECK: "1",
      ...o.trap.env,
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  const stdout = dec.decode(out.stdout);
  let json: unknown;
  try {
    json = JSON.parse(stdout);
  } catch { /* reported in `out` */ }
  return { code: out.code, json, out: `exit ${out.code}\n${stdout}\n${dec.decode(out.stderr)}` };
}

const stdio = [PML_BIN, "stdio"];

/** The human runs `pml approve ID` in a terminal of the workspace. */
async function approveInTerminal(ws: { dir: string; home: string }, id: string) {
  const approve = await runPml(ws, ["approve", id]);
  assertEquals(approve.code, 0, approve.stderr);
}
const text = (r: ToolResult) => r.content.map((c) => c.text ?? "").join("");

Deno.test("inspector --cli tools/list (stdio): names, descriptions and real schemas, a cloud tool's as pml-server lists it", async () => {
  await using trap = startEgressTrap();
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem:read_file", "json", "math"], ask: [], deny: [] },
  });
  const env = { PML_WORKSPACE: ws.dir, PML_CLOUD_URL: cloud.url, PML_API_KEY: cloud.key };
  const listed = await inspector(stdio, { list: true }, { trap, home: ws.home, env });
  assertEquals(listed.code, 0, listed.out);
  const tools = new Map((listed.json as { tools: ListedTool[] }).tools.map((t) => [t.name, t]));
  for (const name of ["filesystem__read_file", "pml__execute", "pml__continue", "math__sum"]) {
    assert(tools.has(name), `${name} in ${[...tools.keys()].join(", ")}`);
  }
  for (const [name, tool] of tools) {
    assertMatch(name, /^[A-Za-z0-9_-]{1,64}$/);
    assert((tool.description ?? "").length > 10, `${name} has a description`);
  }
  assertEquals(tools.get("filesystem__read_file")!.inputSchema.required, ["path"]);
  const served = await cloudTools(cloud);
  for (const name of ["json__parse", "math__sum"]) {
    const real = served.get(name)!.inputSchema;
    assert(real.properties && Object.keys(real.properties).length > 0, name);
    assertEquals(tools.get(name)!.inputSchema.properties, real.properties, name);
    assertEquals(tools.get(name)!.inputSchema.required, real.required, name);
  }
  assertEquals(trap.attempts, []);
});

Deno.test("inspector --cli tools/call (stdio): a read, a cloud tool with a real pml-server, pml:execute with two local tools", async () => {
  await using trap = startEgressTrap();
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem", "math"], ask: [], deny: [] },
  });
  ws.write("notes.txt", "inspected notes");
  const env = { PML_WORKSPACE: ws.dir, PML_CLOUD_URL: cloud.url, PML_API_KEY: cloud.key };

  const read = await inspector(stdio, {
    tool: "filesystem__read_file",
    args: { path: "notes.txt" },
  }, { trap, home: ws.home, env });
  assertEquals(read.code, 0, read.out);
  assertEquals(text(read.json as ToolResult), "inspected notes");
  assertEquals(cloud.calls().length, 0, "a local read never reaches the cloud");

  const sum = await inspector(stdio, { tool: "math__sum", args: { numbers: "[1,2,3.5]" } }, {
    trap,
    home: ws.home,
    env,
  });
  assertEquals(sum.code, 0, sum.out);
  assert(!(sum.json as ToolResult).isError, sum.out);
  assertStringIncludes(text(sum.json as ToolResult), "6.5");
  assertEquals(cloud.calls().map((c) => c.tool?.replace("__", ":")), ["math:sum"]);

  const code = `
    const t = await mcp.filesystem.read_file({ path: "notes.txt" });
    await mcp.filesystem.write_file({ path: "copy.txt", content: t });
    return t.length;`;
  const exec = await inspector(stdio, { tool: "pml__execute", args: { code } }, {
    trap,
    home: ws.home,
    env,
  });
  assertEquals(exec.code, 0, exec.out);
  const body = JSON.parse(text(exec.json as ToolResult));
  assertEquals(body.status, "success", exec.out);
  assertEquals(body.result, 15);
  assertEquals(body.calls.map((c: { tool: string }) => c.tool), [
    "filesystem:read_file",
    "filesystem:write_file",
  ]);
  assertEquals(ws.read("copy.txt"), "inspected notes");
  assertEquals(trap.attempts, []);
});

Deno.test("inspector --cli (stdio): an `ask` write answers approval_required for the human (no elicitation); it outlives its pml, the agent's pml__continue waits, `pml approve` decides", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: [], ask: ["filesystem:write_file"], deny: [] },
  });
  const env = { PML_WORKSPACE: ws.dir };
  const write = await inspector(stdio, {
    tool: "filesystem__write_file",
    args: { path: "w.txt", content: "x" },
  }, { trap, home: ws.home, env });
  assertEquals(write.code, 0, write.out);
  const pending = (write.json as ToolResult).structuredContent!;
  assertEquals(pending.status, "approval_required", write.out);
  assertEquals(pending.options, ["yes", "always", "no"]);
  assertEquals(pending.approval_mode, "human");
  assert(!(await Deno.stat(join(ws.dir, "w.txt")).catch(() => undefined)), "nothing written yet");

  // One `pml stdio` per invocation: the next one finds the stored approval, but the agent alone
  // cannot approve it.
  const id = String(pending.workflow_id);
  const cont = () =>
    inspector(stdio, {
      tool: "pml__continue",
      args: { workflow_id: id, decision: "yes" },
    }, { trap, home: ws.home, env });
  assert(!/token|http:\/\//.test(write.out), `no link in the agent's result: ${write.out}`);
  const early = await cont();
  assertStringIncludes(early.out, "waiting for a human");
  assertStringIncludes(early.out, `pml approve ${id}`);
  assert(!(await Deno.stat(join(ws.dir, "w.txt")).catch(() => undefined)), "still not written");

  await approveInTerminal(ws, id);
  const done = await cont();
  assert(!(done.json as ToolResult).isError, done.out);
  assertEquals(ws.read("w.txt"), "x");
  assertEquals(trap.attempts, []);
});

Deno.test("inspector --cli (stdio): an unknown tool is one clear error; a denied tool says it is denied by .pml.json, not unknown", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem"], ask: [], deny: ["shell"] },
  });
  const env = { PML_WORKSPACE: ws.dir };
  const unknown = await inspector(stdio, { tool: "nosuch__tool", args: { x: "1" } }, {
    trap,
    home: ws.home,
    env,
  });
  assertStringIncludes(unknown.out, '"nosuch__tool"');
  assert(!/MCP error -\d+: MCP error -\d+/.test(unknown.out), `prefixed twice: ${unknown.out}`);

  const denied = await inspector(stdio, { tool: "shell__exec", args: { command: "ls" } }, {
    trap,
    home: ws.home,
    env,
  });
  assertStringIncludes(denied.out, "denied by .pml.json");
  assert(!denied.out.includes("Unknown tool"), denied.out);
  assertEquals(trap.attempts, []);
});

Deno.test("inspector --cli over HTTP (pml serve): tools/list and a read", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem:read_file"], ask: [], deny: [] },
  });
  ws.write("notes.txt", "served notes");
  await using serve = await spawnServe(ws, { DENO_NO_UPDATE_CHECK: "1" });
  const listed = await inspector([serve.url], { list: true }, { trap, home: ws.home });
  assertEquals(listed.code, 0, listed.out);
  const names = (listed.json as { tools: ListedTool[] }).tools.map((t) => t.name);
  assert(names.includes("filesystem__read_file"), names.join(", "));
  const read = await inspector([serve.url], {
    tool: "filesystem__read_file",
    args: { path: "notes.txt" },
  }, { trap, home: ws.home });
  assertEquals(text(read.json as ToolResult), "served notes", read.out);
  assertEquals(trap.attempts, []);
});

/**
 * One Inspector run asks a write of `w.txt` through `pml serve` at `url`; `cont` is a later run
 * (the same server process, another MCP session: each Inspector run is one) that continues it.
 */
async function askWriteOverHttp(
  url: string,
  ws: { home: string },
  trap: EgressTrap,
) {
  const write = await inspector([url], {
    tool: "filesystem__write_file",
    args: { path: "w.txt", content: "x" },
  }, { trap, home: ws.home });
  const pending = (write.json as ToolResult).structuredContent!;
  assertEquals(pending.status, "approval_required", write.out);
  const cont = () =>
    inspector([url], {
      tool: "pml__continue",
      args: { workflow_id: String(pending.workflow_id), decision: "yes" },
    }, { trap, home: ws.home });
  return { pending, cont };
}

Deno.test("inspector --cli over HTTP (pml serve): a later run (another MCP session) waits while the human has not decided, and gets the result once they approved", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: [], ask: ["filesystem:write_file"], deny: [] },
  });
  await using serve = await spawnServe(ws, { DENO_NO_UPDATE_CHECK: "1" });
  const { pending, cont } = await askWriteOverHttp(serve.url, ws, trap);
  assertEquals(pending.approval_mode, "human");
  const id = String(pending.workflow_id);
  const early = await cont();
  assertStringIncludes(early.out, "waiting for a human");
  assert(!(await Deno.stat(join(ws.dir, "w.txt")).catch(() => undefined)), "not written");

  await approveInTerminal(ws, id);
  const done = await cont();
  assert(!(done.json as ToolResult).isError, done.out);
  assertEquals(ws.read("w.txt"), "x");
  assertEquals(trap.attempts, []);
});

Deno.test("inspector --cli over HTTP (pml serve): an approval in the agent's column is answered by the next run (another MCP session), once", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    approvals: "agent",
    permissions: { allow: [], ask: ["filesystem:write_file"], deny: [] },
  });
  await using serve = await spawnServe(ws, { DENO_NO_UPDATE_CHECK: "1" });
  const { pending, cont } = await askWriteOverHttp(serve.url, ws, trap);
  assertEquals(pending.approval_mode, undefined, "the agent's to answer");
  const done = await cont();
  assert(!(done.json as ToolResult).isError, done.out);
  assertEquals(ws.read("w.txt"), "x");
  const again = await cont();
  assertStringIncludes(again.out, "No pending approval");
  assertEquals(trap.attempts, []);
});
