/**
 * Real client, end to end: Claude Code (`claude -p`, the pinned devDependency) drives `pml stdio`
 * (and `pml serve` over HTTP). Its model is the scripted Messages API of `_anthropic_api.ts`: each
 * test scripts the model's tool calls and reads what Claude Code sent it (the tool list, the tool
 * results). Every run has a private HOME and its proxy variables on an egress trap; the tests
 * assert that nothing but loopback was contacted.
 */
import { existsSync } from "node:fs";
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
import {
  type AnthropicApi,
  type Block,
  type MessagesRequest,
  type OfferedTool,
  resultText,
  startAnthropicApi,
  type Step,
  toolResults,
} from "./_anthropic_api.ts";
import { approveProject, claudeMcp, type ClaudeRun, runClaude } from "./_claude.ts";
import { type EgressTrap, startEgressTrap } from "./_egress_trap.ts";

const NO_UPSTREAM = "http://127.0.0.1:9"; // the cloud's http entries exist but are never called
const NO_DENO_UPDATE = { DENO_NO_UPDATE_CHECK: "1" };

/** The `mcpServers` entry that runs `bin/pml stdio` for a workspace. */
function pmlStdio(ws: { dir: string }, env: Record<string, string> = {}) {
  return {
    pml: {
      type: "stdio",
      command: PML_BIN,
      args: ["stdio"],
      env: { PML_WORKSPACE: ws.dir, ...NO_DENO_UPDATE, ...env },
    },
  };
}

/**
 * `pml init --yes <args>` in the workspace, as a user runs it there (no PML_WORKSPACE). Folders
 * holding another `pml` are left out of PATH, so the config names this checkout's launcher.
 */
async function pmlInit(ws: { dir: string; home: string }, args: string[]) {
  const path = (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":")
    .filter((d) => !existsSync(join(d, "pml"))).join(":");
  const out = await new Deno.Command(PML_BIN, {
    args: ["init", "--yes", ...args],
    cwd: ws.dir,
    env: { PATH: path, HOME: ws.home, ...NO_DENO_UPDATE },
    clearEnv: true,
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

/** The pml tools Claude Code offered the model in a request, by name. */
function pmlTools(request: MessagesRequest): Map<string, OfferedTool> {
  return new Map(
    (request.tools ?? []).filter((t) => t.name.startsWith("mcp__pml__")).map((t) => [t.name, t]),
  );
}

/** What came back, in turn `turn`, of the tool calls the model made in the turn before, by tool name. */
function resultsByTool(turns: MessagesRequest[], turn: number) {
  const calls = (turns[turn].messages.at(-2)?.content ?? []) as Block[];
  const byId = new Map(toolResults(turns[turn]).map((r) => [r.tool_use_id, r]));
  return new Map(
    calls.filter((c) => c.type === "tool_use").map((c) => {
      const r = byId.get(c.id!);
      return [c.name!, { text: r ? resultText(r) : "", isError: r?.is_error === true }];
    }),
  );
}

/** Nothing left loopback, and Claude Code needed nothing from the API but `POST /v1/messages`. */
function assertHermetic(api: AnthropicApi, trap: EgressTrap) {
  assertEquals(trap.attempts, [], "no request may leave loopback");
  const other = api.requests.filter((r) => !(r.method === "POST" && r.path === "/v1/messages"));
  assertEquals(other.map((r) => `${r.method} ${r.path}`), [], "only POST /v1/messages is needed");
}

function assertRanOk(run: ClaudeRun, api: AnthropicApi) {
  assertEquals(run.code, 0, run.why);
  assertEquals(run.result?.is_error, false, run.why);
  assertEquals(api.pending(), 0, `every scripted step was used\n${run.why}`);
}

/** An Elicitation hook (a command in Claude Code's settings) that answers PML's question with `answer`. */
function elicitationHook(
  dir: string,
  answer: { action: "accept"; decision: string } | { action: "decline" | "cancel" },
) {
  const input = join(dir, `elicitation-${crypto.randomUUID()}.json`);
  const output = JSON.stringify({
    hookSpecificOutput: {
      hookEventName: "Elicitation",
      action: answer.action,
      ...("decision" in answer ? { content: { decision: answer.decision } } : {}),
    },
  });
  const script = join(dir, `hook-${crypto.randomUUID()}.sh`);
  Deno.writeTextFileSync(script, `#!/bin/sh\ncat > '${input}'\nprintf '%s\\n' '${output}'\n`);
  Deno.chmodSync(script, 0o755);
  return {
    settings: {
      hooks: { Elicitation: [{ matcher: "pml", hooks: [{ type: "command", command: script }] }] },
    },
    /** What the hook received, once it ran. */
    seen: () => JSON.parse(Deno.readTextFileSync(input)),
  };
}

Deno.test("claude -p: the model gets pml's tools as mcp__pml__*, with descriptions and the real schemas of local and cloud tools; a read and cloud calls go through", async () => {
  await using trap = startEgressTrap();
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({
    permissions: {
      allow: ["filesystem:read_file", "filesystem:list_directory", "json", "math"],
      ask: ["filesystem:write_file"],
      deny: [],
    },
  });
  ws.write("notes.txt", "local notes for claude");
  // The scripted model reads the argument names from the schemas it was given, as a model does.
  const argName = (req: MessagesRequest, tool: string, fallback: string) =>
    Object.keys(pmlTools(req).get(tool)?.input_schema?.properties ?? {})[0] ?? fallback;
  await using api = startAnthropicApi([
    (req) => ({
      tools: [
        { name: "mcp__pml__filesystem__read_file", input: { path: "notes.txt" } },
        {
          name: "mcp__pml__math__sum",
          input: { [argName(req, "mcp__pml__math__sum", "values")]: [1, 2, 3.5] },
        },
        {
          name: "mcp__pml__json__parse",
          input: { [argName(req, "mcp__pml__json__parse", "json")]: '{"a":[1,2]}' },
        },
      ],
    }),
    { text: "done" },
  ]);
  const run = await runClaude({
    cwd: ws.dir,
    home: ws.home,
    api,
    trap,
    mcpServers: pmlStdio(ws, cloud.env),
  });
  assertRanOk(run, api);
  const turns = api.turns();
  assertEquals(turns.length, 2, run.why);

  // The tool list: names with Claude Code's mcp__<server>__ prefix, all within the API's pattern.
  const tools = pmlTools(turns[0]);
  for (
    const name of [
      "mcp__pml__filesystem__read_file",
      "mcp__pml__filesystem__write_file",
      "mcp__pml__pml__execute",
      "mcp__pml__pml__continue",
      "mcp__pml__pml__search",
      "mcp__pml__json__parse",
      "mcp__pml__math__sum",
    ]
  ) assert(tools.has(name), `${name} offered to the model: ${[...tools.keys()].join(", ")}`);
  for (const [name, tool] of tools) {
    assertMatch(name, /^[a-zA-Z0-9_-]{1,64}$/);
    assert((tool.description ?? "").length > 10, `${name} has a description`);
    assertEquals(tool.input_schema?.type, "object", name);
  }
  const read = tools.get("mcp__pml__filesystem__read_file")!;
  assert("path" in (read.input_schema!.properties as object), JSON.stringify(read.input_schema));
  assertEquals(read.input_schema!.required, ["path"]);

  // Cloud tools: what the model got is what pml-server itself lists (issue 11, item 1).
  const served = await cloudTools(cloud);
  for (const name of ["json__parse", "math__sum"]) {
    const offered = tools.get(`mcp__pml__${name}`)!.input_schema!;
    const real = served.get(name)!.inputSchema;
    assert(real.properties && Object.keys(real.properties).length > 0, `${name} has parameters`);
    assertEquals(offered.properties, real.properties, `${name}: the real schema reached the model`);
    assertEquals(offered.required, real.required, name);
  }

  // The calls: a local read, and two cloud tools called with the argument names of their schemas.
  const results = resultsByTool(turns, 1);
  assertEquals(results.get("mcp__pml__filesystem__read_file"), {
    text: "local notes for claude",
    isError: false,
  });
  const sum = results.get("mcp__pml__math__sum")!;
  assert(!sum.isError, sum.text);
  assertStringIncludes(sum.text, "6.5");
  const parsed = results.get("mcp__pml__json__parse")!;
  assert(!parsed.isError, parsed.text);
  assertStringIncludes(parsed.text, '"a"');
  const atCloud = cloud.calls().map((c) => c.tool?.replace("__", ":")).sort();
  assertEquals(atCloud, ["json:parse", "math:sum"], "the read stayed local");
  for (const c of cloud.calls()) assertEquals(c.headers["authorization"], `Bearer ${cloud.key}`);
  assertHermetic(api, trap);
});

Deno.test("claude -p: a tool id past 64 characters reaches the model shortened by pml to 54, 64 characters with the mcp__pml__ prefix, and calls back", async () => {
  await using trap = startEgressTrap();
  const ns = "reporting_".repeat(3); // 30 characters
  const action = "summarise_quarterly_sales_by_region_v2"; // 38 characters
  await using ws = tempWorkspace({
    permissions: { allow: [ns], ask: [], deny: [] },
    private_mcps: {
      [ns]: { type: "deno", code: `export async function ${action}() { return "long name ok"; }` },
    },
  });
  let offered = "";
  await using api = startAnthropicApi([
    (req) => {
      offered = [...pmlTools(req).keys()].find((n) => n.startsWith(`mcp__pml__${ns}`)) ?? "";
      return offered ? { tools: [{ name: offered, input: {} }] } : { text: "no such tool" };
    },
    { text: "done" },
  ]);
  const run = await runClaude({ cwd: ws.dir, home: ws.home, api, trap, mcpServers: pmlStdio(ws) });
  assertRanOk(run, api);
  assertEquals(offered.length, 64, offered);
  assertMatch(offered.slice("mcp__pml__".length), /^[A-Za-z0-9_-]{54}$/);
  assertEquals(resultsByTool(api.turns(), 1).get(offered), {
    text: "long name ok",
    isError: false,
  });
  assertHermetic(api, trap);
});

Deno.test("claude -p: without --allowedTools, Claude Code's own permission layer refuses pml's tools before pml sees the call", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
  ws.write("notes.txt", "x");
  await using api = startAnthropicApi([
    { tools: [{ name: "mcp__pml__filesystem__read_file", input: { path: "notes.txt" } }] },
    { text: "done" },
  ]);
  const run = await runClaude({
    cwd: ws.dir,
    home: ws.home,
    api,
    trap,
    mcpServers: pmlStdio(ws),
    allowedTools: [],
  });
  assertRanOk(run, api);
  assertEquals(run.result?.permission_denials?.map((d) => d.tool_name), [
    "mcp__pml__filesystem__read_file",
  ]);
  const result = resultsByTool(api.turns(), 1).get("mcp__pml__filesystem__read_file")!;
  assert(result.isError, result.text);
  assert(!run.debug.includes("Calling MCP tool"), "the call never reached pml");
  assertHermetic(api, trap);
});

/**
 * Writes `text` into the named pipe `path` once a reader opens it (the write waits for one), giving
 * up after `seconds`: resolves to true when a reader came.
 */
async function feedPipe(path: string, text: string, seconds: number): Promise<boolean> {
  const out = await new Deno.Command("timeout", {
    args: [String(seconds), "sh", "-c", 'printf %s "$1" > "$2"', "sh", text, path],
    stdout: "null",
    stderr: "null",
  }).output();
  return out.success;
}

Deno.test("claude -p: reads pml marks read-only (readOnlyHint) run side by side: the second is served while the first still waits", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
  // Two named pipes: reading one waits until something writes into it.
  for (const name of ["first.pipe", "second.pipe"]) {
    const made = await new Deno.Command("mkfifo", { args: [join(ws.dir, name)] }).output();
    assert(made.success, `mkfifo ${name}`);
  }
  await using api = startAnthropicApi([
    {
      tools: [
        { name: "mcp__pml__filesystem__read_file", input: { path: "first.pipe" } },
        { name: "mcp__pml__filesystem__read_file", input: { path: "second.pipe" } },
      ],
    },
    { text: "done" },
  ]);
  const running = runClaude({ cwd: ws.dir, home: ws.home, api, trap, mcpServers: pmlStdio(ws) });
  // The second pipe is read while nothing has been written into the first: the two calls were in
  // flight together. Called one after the other, the first read would wait (nothing writes into
  // it yet) and the second would never start.
  const secondWhileFirstWaits = await feedPipe(join(ws.dir, "second.pipe"), "two", 60);
  assert(await feedPipe(join(ws.dir, "first.pipe"), "one", 60), "the first read started");
  // One after the other, the second read starts only now: let it finish, then fail.
  if (!secondWhileFirstWaits) await feedPipe(join(ws.dir, "second.pipe"), "two", 60);
  const run = await running;
  assert(secondWhileFirstWaits, `the second read waited for the first\n${run.why}`);
  assertRanOk(run, api);
  const turn = api.turns()[1];
  assertEquals(toolResults(turn).map((r) => resultText(r)).sort(), ["one", "two"]);
  assertHermetic(api, trap);
});

Deno.test("claude -p: pml:execute runs code that calls two local tools", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
  ws.write("in.txt", "shout this");
  const code = `
    const text = await mcp.filesystem.read_file({ path: "in.txt" });
    await mcp.filesystem.write_file({ path: "out.txt", content: text.toUpperCase() });
    return { length: text.length };`;
  await using api = startAnthropicApi([
    { tools: [{ name: "mcp__pml__pml__execute", input: { code } }] },
    { text: "done" },
  ]);
  const run = await runClaude({ cwd: ws.dir, home: ws.home, api, trap, mcpServers: pmlStdio(ws) });
  assertRanOk(run, api);
  const result = resultsByTool(api.turns(), 1).get("mcp__pml__pml__execute")!;
  assert(!result.isError, result.text);
  const body = JSON.parse(result.text);
  assertEquals(body.status, "success", result.text);
  assertEquals(body.result, { length: 10 });
  assertEquals(body.calls.map((c: { tool: string; routing: string }) => [c.tool, c.routing]), [
    ["filesystem:read_file", "client"],
    ["filesystem:write_file", "client"],
  ]);
  assertEquals(ws.read("out.txt"), "SHOUT THIS");
  assertHermetic(api, trap);
});

Deno.test("claude -p: an `ask` write, whose elicitation print mode leaves unanswered, waits for the human: the model's pml__continue gets waiting_for_human, `pml approve` in a terminal decides, the model's next pml__continue writes", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
  });
  let first = "";
  let early = "";
  let id = "";
  let approved = "";
  const cont = () => ({
    tools: [{ name: "mcp__pml__pml__continue", input: { workflow_id: id, decision: "yes" } }],
  });
  await using api = startAnthropicApi([
    {
      tools: [{ name: "mcp__pml__filesystem__write_file", input: { path: "a.txt", content: "A" } }],
    },
    (req) => {
      first = toolResults(req).map(resultText).join("\n");
      id = first.match(/"workflow_id"\s*:\s*"([^"]+)"/)?.[1] ?? "";
      // The model tries to approve the write itself.
      return id ? cont() : { text: "no workflow_id to continue" };
    },
    async (req) => {
      early = toolResults(req).map(resultText).join("\n");
      // Meanwhile the human decides in a terminal of the workspace, while pml stdio runs.
      approved = (await runPml(ws, ["approve", id], NO_DENO_UPDATE)).text;
      return cont();
    },
    { text: "done" },
  ]);
  const run = await runClaude({ cwd: ws.dir, home: ws.home, api, trap, mcpServers: pmlStdio(ws) });
  // Claude Code declares elicitation but answers it without anyone in print mode.
  assertStringIncludes(run.debug, "Elicitation request received in print mode", run.why);
  assertStringIncludes(first, '"approval_required"', `not a refusal: ${first}`);
  // The model gets the id and how a human answers, never a link to the page.
  assertStringIncludes(first, `pml approve ${id}`);
  assert(!/approval_url|token|http:\/\//.test(first), first);
  assert(!/refused/i.test(first), first);
  assertStringIncludes(early, "waiting for a human");
  assertStringIncludes(early, `pml approve ${id}`);
  assert(!/token|http:\/\//.test(early), early);
  assertStringIncludes(approved, `${id}: yes`);
  assertRanOk(run, api);
  const continued = resultsByTool(api.turns(), 3).get("mcp__pml__pml__continue")!;
  assert(!continued.isError, continued.text);
  assertEquals(ws.read("a.txt"), "A");
  const audit = await Deno.readTextFile(join(ws.dir, ".pml/audit.log")).catch(() => "");
  assert(!audit.includes('"by":"agent"'), audit);
  assertHermetic(api, trap);
});

Deno.test("claude -p: an untrusted .pml.json's notice reaches the model (Claude Code hands it structuredContent alone), in a refusal and in a question", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace();
  // A file nobody trusted (a cloned repository's): its allow waits, its deny applies.
  Deno.writeTextFileSync(
    join(ws.dir, ".pml.json"),
    JSON.stringify({ permissions: { allow: ["filesystem"], ask: [], deny: ["shell"] } }),
  );
  await using api = startAnthropicApi([
    {
      tools: [
        { name: "mcp__pml__filesystem__read_file", input: { path: "../outside.txt" } },
        { name: "mcp__pml__filesystem__write_file", input: { path: "a.txt", content: "A" } },
      ],
    },
    { text: "done" },
  ]);
  const run = await runClaude({ cwd: ws.dir, home: ws.home, api, trap, mcpServers: pmlStdio(ws) });
  assertRanOk(run, api);
  const results = resultsByTool(api.turns(), 1);
  for (const tool of ["mcp__pml__filesystem__read_file", "mcp__pml__filesystem__write_file"]) {
    const seen = results.get(tool)?.text ?? "";
    assertStringIncludes(seen, "not trusted", `${tool}: ${seen}`);
    assertStringIncludes(seen, "pml trust", `${tool}: ${seen}`);
  }
  assertHermetic(api, trap);
});

Deno.test("claude -p: an Elicitation hook answers PML's question in place: yes writes, decline refuses", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: [], ask: ["filesystem:write_file"], deny: [] },
  });
  const write = (path: string): Step => ({
    tools: [{ name: "mcp__pml__filesystem__write_file", input: { path, content: path } }],
  });

  const yes = elicitationHook(ws.root, { action: "accept", decision: "yes" });
  await using api = startAnthropicApi([write("yes.txt"), { text: "done" }]);
  const run = await runClaude({
    cwd: ws.dir,
    home: ws.home,
    api,
    trap,
    mcpServers: pmlStdio(ws),
    settings: yes.settings,
  });
  assertRanOk(run, api);
  const written = resultsByTool(api.turns(), 1).get("mcp__pml__filesystem__write_file")!;
  assert(!written.isError, written.text);
  assertEquals(ws.read("yes.txt"), "yes.txt");
  const asked = yes.seen();
  assertEquals(asked.mcp_server_name, "pml");
  assertStringIncludes(asked.message, "filesystem:write_file");
  assertEquals(asked.requested_schema.properties.decision.enum, ["yes", "always", "no"]);

  const no = elicitationHook(ws.root, { action: "decline" });
  await using api2 = startAnthropicApi([write("no.txt"), { text: "done" }]);
  const run2 = await runClaude({
    cwd: ws.dir,
    home: ws.home,
    api: api2,
    trap,
    mcpServers: pmlStdio(ws),
    settings: no.settings,
  });
  assertRanOk(run2, api2);
  const refused = resultsByTool(api2.turns(), 1).get("mcp__pml__filesystem__write_file")!;
  assert(refused.isError, refused.text);
  assertStringIncludes(refused.text, "Permission denied");
  assert(!(await Deno.stat(join(ws.dir, "no.txt")).catch(() => undefined)), "not written");
  // A hook answers at once: still a no, but audited as the client's, with how long it took
  // (docs/approvals.md: a decline under 1.5 s is nobody's reading of the question).
  const audit = (await Deno.readTextFile(join(ws.dir, ".pml/audit.log"))).trim().split("\n")
    .map((l) => JSON.parse(l));
  const decided = audit.find((l) => l.event === "approval_decided" && l.decision === "no");
  assert(decided, JSON.stringify(audit));
  if (decided.by === "client") {
    assert(decided.declined_in_ms < 1500, JSON.stringify(decided));
    assertStringIncludes(refused.text, "the client declined the question in");
  } else {
    assertEquals(decided.by, "user", JSON.stringify(decided));
    assertStringIncludes(refused.text, "the user refused");
  }
  assertHermetic(api, trap);
  assertHermetic(api2, trap);
});

Deno.test("claude mcp list: the .mcp.json of `pml init --client claude` is healthy once approved, without warnings; claude -p uses it from the project", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace();
  ws.write("notes.txt", "project notes");
  const init = await pmlInit(ws, ["--client", "claude"]);
  assertEquals(init.code, 0, init.out);
  const mcpJson = ws.read(".mcp.json");
  assert(!mcpJson.includes("${workspaceFolder}"), `VS Code syntax in .mcp.json: ${mcpJson}`);
  await using api = startAnthropicApi([]);
  const where = { cwd: ws.dir, home: ws.home, api, trap };
  // Interactive use waits for a person to approve the project's servers...
  const pending = await claudeMcp(["list"], where);
  assertMatch(pending.out, /^pml: .* - ⏸ Pending approval/m, pending.out);

  // ...print mode starts them without asking (measured; see docs/clients.md), from the project.
  await using api2 = startAnthropicApi([
    { tools: [{ name: "mcp__pml__filesystem__read_file", input: { path: "notes.txt" } }] },
    { text: "done" },
  ]);
  const run = await runClaude({ cwd: ws.dir, home: ws.home, api: api2, trap });
  assertRanOk(run, api2);
  assertEquals(resultsByTool(api2.turns(), 1).get("mcp__pml__filesystem__read_file"), {
    text: "project notes",
    isError: false,
  });
  assertHermetic(api2, trap);

  await approveProject(ws.home, ws.dir);
  const list = await claudeMcp(["list"], where);
  assertEquals(list.code, 0, list.out);
  assertMatch(list.out, /^pml: .* - ✔ Connected$/m, list.out);
  assert(!/Missing environment variables|Warning/i.test(list.out), list.out);
  assertEquals(trap.attempts, []);
});

Deno.test("claude -p over HTTP: `pml serve` as a type http server, a read and an `ask` write approved by the Elicitation hook", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
  });
  ws.write("notes.txt", "served notes");
  await using serve = await spawnServe(ws, NO_DENO_UPDATE);
  const hook = elicitationHook(ws.root, { action: "accept", decision: "yes" });
  await using api = startAnthropicApi([
    {
      tools: [
        { name: "mcp__pml__filesystem__read_file", input: { path: "notes.txt" } },
        { name: "mcp__pml__filesystem__write_file", input: { path: "w.txt", content: "via http" } },
      ],
    },
    { text: "done" },
  ]);
  const run = await runClaude({
    cwd: ws.dir,
    home: ws.home,
    api,
    trap,
    mcpServers: { pml: { type: "http", url: serve.url } },
    settings: hook.settings,
  });
  assertRanOk(run, api);
  const results = resultsByTool(api.turns(), 1);
  assertEquals(results.get("mcp__pml__filesystem__read_file"), {
    text: "served notes",
    isError: false,
  });
  const written = results.get("mcp__pml__filesystem__write_file")!;
  assert(!written.isError, written.text);
  assertEquals(ws.read("w.txt"), "via http");
  assertEquals(hook.seen().mcp_server_name, "pml", "elicitation works over HTTP too");
  assertHermetic(api, trap);
});

Deno.test("claude mcp list: the http config of `pml init --client claude --transport http` reaches a running `pml serve`", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace();
  await using serve = await spawnServe(ws, NO_DENO_UPDATE);
  const port = new URL(serve.url).port;
  const init = await pmlInit(ws, ["--client", "claude", "--transport", "http", "--port", port]);
  assertEquals(init.code, 0, init.out);
  const entry = JSON.parse(ws.read(".mcp.json")).mcpServers.pml;
  assertEquals([entry.type, entry.url], ["http", serve.url], JSON.stringify(entry));
  await approveProject(ws.home, ws.dir);
  await using api = startAnthropicApi([]);
  const list = await claudeMcp(["list"], { cwd: ws.dir, home: ws.home, api, trap });
  assertMatch(list.out, /^pml: http:\/\/127\.0\.0\.1:\d+\/mcp \(HTTP\) - ✔ Connected$/m, list.out);
  assertEquals(trap.attempts, []);
});
