/**
 * Real client, end to end: Codex (`codex exec`, the pinned devDependency) drives `pml stdio` (and
 * `pml serve` over HTTP). Its model is the scripted Responses API of `_openai_responses_api.ts`:
 * each test scripts the model's function calls and reads what Codex sent it (the tools with their
 * schemas, the call outputs). Every run has a private HOME and CODEX_HOME and its proxy variables
 * on the egress trap; the tests assert that only loopback was contacted.
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
import { spawnServe } from "../_serve.ts";
import { connectStdio, PML_BIN } from "../_spawn.ts";
import { cloudTools } from "./_cloud_tools.ts";
import {
  callOutputs,
  namespaceFunctions,
  type ResponsesApi,
  type ScriptedResponsesStep,
  startResponsesApi,
} from "./_openai_responses_api.ts";
import { type EgressTrap, startEgressTrap } from "./_egress_trap.ts";

const CODEX = join(import.meta.dirname!, "..", "..", "..", "node_modules", ".bin", "codex");
const NO_UPSTREAM = "http://127.0.0.1:9"; // the cloud's http entries exist but are never called

const toml = (v: string) => JSON.stringify(v);

/**
 * How Codex may run PML's tools headless:
 * - `bypass`: `--dangerously-bypass-approvals-and-sandbox`, Codex calls every tool unasked;
 * - `review`: `--approve-for-me`, Codex's automatic reviewer (a request to the same model API)
 *   decides each MCP call first;
 * - `default`: neither, Codex's own approval of MCP calls cannot be answered and refuses them.
 */
type Mode = "bypass" | "review" | "default";

/** The MCP server entry: `pml stdio` for the workspace, or a URL (`pml serve`). */
type Server = { stdio: Record<string, string> } | { url: string };

/**
 * Codex's user config: the scripted provider, PML (unless `server` is null: the project's own
 * `.codex/config.toml` then names it, read when the project is trusted), and nothing that calls
 * Codex's vendor.
 */
function codexConfig(
  api: ResponsesApi,
  ws: { dir: string },
  server: Server | null,
  trap: EgressTrap,
): string {
  const entry = server === null ? [] : "url" in server ? [`url = ${toml(server.url)}`] : [
    `command = ${toml(PML_BIN)}`,
    `args = ["stdio"]`,
    `env = { ${
      // Codex passes a stdio server only HOME, PATH and what is named here: the trap's proxy
      // variables too, so that anything pml itself sends off loopback lands in the trap.
      Object.entries({
        PML_WORKSPACE: ws.dir,
        DENO_NO_UPDATE_CHECK: "1",
        ...trap.env,
        ...server.stdio,
      })
        .map(([k, v]) => `${k} = ${toml(v)}`).join(", ")} }`,
  ];
  return [
    `model = "gpt-5"`,
    `model_provider = "scripted"`,
    // Plugins and analytics contact Codex's vendor at start (seen by the trap without these).
    `[features]`,
    `plugins = false`,
    `[analytics]`,
    `enabled = false`,
    `[model_providers.scripted]`,
    `name = "scripted"`,
    `base_url = ${toml(api.url)}`,
    `env_key = "SCRIPTED_KEY"`,
    `wire_api = "responses"`,
    `[projects.${toml(ws.dir)}]`,
    `trust_level = ${toml(server === null ? "trusted" : "untrusted")}`,
    // `required`: Codex otherwise runs the turn without a server not started within ~1 s.
    ...(server === null ? [] : [`[mcp_servers.pml]`, `required = true`, ...entry]),
  ].join("\n") + "\n";
}

/**
 * Codex starts its first turn without a server that is not ready yet: the first `pml` of an
 * installation compiles PML's sources (into the installation's cache, see bin/pml), which on a busy
 * machine takes longer than Codex waits. Done once, as `npm ci && bin/pml …` would on a user's.
 */
let warmed: Promise<unknown> | undefined;

async function runCodex(
  ws: { dir: string; home: string },
  api: ResponsesApi,
  trap: EgressTrap,
  opts: { mode?: Mode; server?: Server | null } = {},
) {
  await (warmed ??= new Deno.Command(PML_BIN, { args: ["--version"], stdout: "null" }).output());
  const codexHome = join(ws.home, "codex");
  Deno.mkdirSync(codexHome, { recursive: true });
  Deno.writeTextFileSync(
    join(codexHome, "config.toml"),
    codexConfig(api, ws, opts.server === undefined ? { stdio: {} } : opts.server, trap),
  );
  const mode = opts.mode ?? "bypass";
  const flags = {
    bypass: ["--dangerously-bypass-approvals-and-sandbox"],
    review: ["--approve-for-me"],
    default: [],
  }[mode];
  const out = await new Deno.Command(CODEX, {
    args: ["exec", "--skip-git-repo-check", "--ephemeral", ...flags, "Do the task."],
    cwd: ws.dir,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: ws.home,
      CODEX_HOME: codexHome,
      SCRIPTED_KEY: "scripted",
      ...trap.env,
    },
    clearEnv: true,
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

/** PATH without any other `pml`, so that `pml init` names this checkout's launcher. */
function pathWithoutPml(): string {
  return (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":")
    .filter((d) => !existsSync(join(d, "pml"))).join(":");
}

/** Only the scripted API on loopback was asked, and nothing reached the trap. */
function assertHermetic(api: ResponsesApi, trap: EgressTrap) {
  assertEquals(trap.attempts, [], "nothing may leave loopback");
  for (const r of api.requests) assertEquals(r.endpoint, "POST /v1/responses");
}

/** Where `offered` differs from `listed`: `path: listed → offered` (missing as undefined). */
function schemaDiff(listed: unknown, offered: unknown, path = ""): string[] {
  if (JSON.stringify(listed) === JSON.stringify(offered)) return [];
  const isObj = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (isObj(listed) && isObj(offered)) {
    const keys = new Set([...Object.keys(listed), ...Object.keys(offered)]);
    return [...keys].flatMap((k) => schemaDiff(listed[k], offered[k], path ? `${path}.${k}` : k));
  }
  if (Array.isArray(listed) && Array.isArray(offered) && listed.length === offered.length) {
    return listed.flatMap((v, i) => schemaDiff(v, offered[i], `${path}[${i}]`));
  }
  return [`${path}: ${JSON.stringify(listed)} → ${JSON.stringify(offered)}`];
}

/**
 * What Codex 0.169 makes of an input schema, as measured: the validation keywords `minimum`,
 * `maximum`, `minLength` and `default` are dropped; a property without a `type` (any JSON value)
 * becomes `{}`, its description lost; an object without `properties` gets `properties: {}`.
 * Everything else (types, descriptions, enums, items, required, additionalProperties) is kept.
 */
function asCodexSends(schema: unknown): unknown {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return schema;
  const node = { ...(schema as Record<string, unknown>) };
  if (!("type" in node) && !("enum" in node) && !("anyOf" in node)) return {};
  for (const k of ["minimum", "maximum", "minLength", "default"]) delete node[k];
  if (node.type === "object" && !("properties" in node)) node.properties = {};
  if (node.properties) {
    node.properties = Object.fromEntries(
      Object.entries(node.properties as Record<string, unknown>).map(([k, v]) => [
        k,
        asCodexSends(v),
      ]),
    );
  }
  if (node.items) node.items = asCodexSends(node.items);
  return node;
}

/** The audit log of the workspace ("" when there is none). */
function audit(ws: { read(rel: string): string }): string {
  try {
    return ws.read(".pml/audit.log");
  } catch {
    return "";
  }
}

/** The `workflow_id` of an `approval_required` output. */
function workflowId(output: string): string {
  const id = /"workflow_id"\s*:\s*"([0-9a-f-]{36})"/.exec(output)?.[1];
  assert(id, `approval_required expected, got ${output}`);
  return id;
}

Deno.test("codex exec: the model gets every pml tool in the mcp__pml namespace with pml's own descriptions and schemas (cloud ones too); a read and cloud calls work", async () => {
  await using trap = startEgressTrap();
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem:read_file", "json", "math"], ask: [], deny: [] },
  });
  ws.write("notes.txt", "codex notes");
  const cloudEnv = { PML_API_KEY: cloud.key, PML_CLOUD_URL: cloud.url };
  await using api = startResponsesApi([
    {
      calls: [
        { name: "filesystem__read_file", args: { path: "notes.txt" } },
        { name: "math__sum", args: { numbers: [2, 3] } },
        { name: "json__parse", args: { text: '{"answer":42}' } },
      ],
    },
    { text: "done" },
  ]);
  const run = await runCodex(ws, api, trap, { server: { stdio: cloudEnv } });
  assertEquals(run.code, 0, run.out);
  assertEquals(api.turns.length, 2, run.out);

  // What pml itself lists to any MCP client, and what Codex offered the model.
  await using direct = await connectStdio(ws, { env: cloudEnv });
  const listed = (await direct.listTools()).tools;
  const offered = namespaceFunctions(api.turns[0]);
  assertEquals([...offered.keys()].sort(), listed.map((t) => t.name).sort());
  for (const tool of listed) {
    const fn = offered.get(tool.name)!;
    assertEquals(fn.type, "function", tool.name);
    assertEquals(fn.strict, false, tool.name);
    assertEquals(fn.description, tool.description, tool.name);
    // Codex's own reading of the schema (measured): see `asCodexSends`.
    assertEquals(
      schemaDiff(asCodexSends(tool.inputSchema), fn.parameters),
      [],
      `${tool.name}: ${JSON.stringify(tool.inputSchema)}`,
    );
  }
  // The cloud tools carry what pml-server lists, not an any-object stand-in.
  const served = await cloudTools(cloud);
  for (const name of ["math__sum", "json__parse"]) {
    assertEquals(offered.get(name)?.parameters, asCodexSends(served.get(name)?.inputSchema), name);
    assertEquals(offered.get(name)?.description, served.get(name)?.description, name);
  }
  assertEquals(offered.get("math__sum")?.parameters?.required, ["numbers"]);
  // PML's instructions become the namespace's description.
  const ns = api.turns[0].tools?.find((t) => t.name === "mcp__pml");
  assertEquals(ns?.description, direct.getInstructions());

  const outputs = callOutputs(api.turns[1]);
  assertStringIncludes(outputs.get("filesystem__read_file")!, "codex notes");
  assertStringIncludes(outputs.get("math__sum")!, "5");
  assertStringIncludes(outputs.get("json__parse")!, "answer");
  assertEquals(cloud.calls().map((c) => c.tool).sort(), ["json__parse", "math__sum"]);
  assertHermetic(api, trap);
});

Deno.test("codex exec --approve-for-me: the reviewer lets an ask write through, Codex cancels PML's elicitation, the model continues the approval_required with pml__continue", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    approvals: "agent",
    permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
  });
  const steps: ScriptedResponsesStep[] = [
    { calls: [{ name: "filesystem__write_file", args: { path: "out.txt", content: "hi" } }] },
    (request) => {
      const id = workflowId(callOutputs(request).get("filesystem__write_file") ?? "");
      return { calls: [{ name: "pml__continue", args: { workflow_id: id, decision: "yes" } }] };
    },
    { text: "done" },
  ];
  await using api = startResponsesApi(steps, {
    review: () => ({ outcome: "allow", risk_level: "low" }),
  });
  const run = await runCodex(ws, api, trap, { mode: "review" });
  assertEquals(run.code, 0, run.out);
  assertEquals(api.turns.length, 3, run.out);
  // Both MCP calls (the write and pml__continue) were reviewed by Codex first.
  assertEquals(api.reviews.length, 2, run.out);
  assertStringIncludes(callOutputs(api.turns[2]).get("pml__continue")!, "out.txt");
  assertEquals(ws.read("out.txt"), "hi");
  // Codex answered `cancel`: nobody was asked, and the audit says so.
  const log = audit(ws);
  assertStringIncludes(log, '"elicitation":"cancel"');
  assertStringIncludes(log, '"fallback":"approval_required"');
  assert(!log.includes('"by":"user"'), log);
  assertHermetic(api, trap);
});

Deno.test("codex exec --approve-for-me: a call the reviewer denies never reaches pml", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem"], ask: [], deny: [] },
  });
  await using api = startResponsesApi([
    { calls: [{ name: "filesystem__write_file", args: { path: "out.txt", content: "hi" } }] },
    { text: "done" },
  ], { review: () => ({ outcome: "deny", risk_level: "high", rationale: "scripted no" }) });
  const run = await runCodex(ws, api, trap, { mode: "review" });
  assertEquals(run.code, 0, run.out);
  assertEquals(api.reviews.length, 1, run.out);
  const output = callOutputs(api.turns[1]).get("filesystem__write_file") ?? "";
  assert(!output.includes("approval_required"), output);
  assert(!(await Deno.stat(join(ws.dir, "out.txt")).catch(() => false)), "nothing written");
  assertEquals(audit(ws), "", "pml never saw the call");
  assertHermetic(api, trap);
});

Deno.test("codex exec without an approval flag: a read pml marks read-only runs; Codex refuses every other MCP call itself (its approval policy is never), pml is not called", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
  ws.write("notes.txt", "notes codex may read");
  await using api = startResponsesApi([
    {
      calls: [
        { name: "filesystem__read_file", args: { path: "notes.txt" } },
        { name: "filesystem__write_file", args: { path: "out.txt", content: "hi" } },
      ],
    },
    { text: "done" },
  ]);
  const run = await runCodex(ws, api, trap, { mode: "default" });
  assertEquals(run.code, 0, run.out);
  const outputs = callOutputs(api.turns[1]);
  // `readOnlyHint` on the read: Codex needs no approval for it, and PML's own permission applies.
  assertStringIncludes(outputs.get("filesystem__read_file")!, "notes codex may read");
  assertStringIncludes(
    outputs.get("filesystem__write_file")!,
    "MCP tool call requires approval, but approval policy is never",
  );
  assert(!(await Deno.stat(join(ws.dir, "out.txt")).catch(() => false)), "nothing written");
  assertHermetic(api, trap);
});

Deno.test("codex exec without an approval flag: the cloud's pure tools (json, math) carry readOnlyHint from pml-server and run", async () => {
  await using trap = startEgressTrap();
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({ permissions: { allow: ["json", "math"], ask: [], deny: [] } });
  await using api = startResponsesApi([
    {
      calls: [
        { name: "json__parse", args: { text: '{"answer":42}' } },
        { name: "math__sum", args: { numbers: [2, 3] } },
      ],
    },
    { text: "done" },
  ]);
  const cloudEnv = { PML_API_KEY: cloud.key, PML_CLOUD_URL: cloud.url };
  const run = await runCodex(ws, api, trap, { mode: "default", server: { stdio: cloudEnv } });
  assertEquals(run.code, 0, run.out);
  const outputs = callOutputs(api.turns[1]);
  assertStringIncludes(outputs.get("json__parse")!, "answer");
  assertStringIncludes(outputs.get("math__sum")!, "5");
  assertEquals(cloud.calls().map((c) => c.tool).sort(), ["json__parse", "math__sum"]);
  assertHermetic(api, trap);
});

Deno.test("codex exec --dangerously-bypass-approvals-and-sandbox: Codex declines PML's elicitation unasked: a no, reported as the client's, not the user's; pml:execute with two local tools", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: {
      allow: ["filesystem:read_file", "filesystem:list_directory", "pml"],
      ask: ["filesystem:write_file"],
      deny: [],
    },
  });
  ws.write("notes.txt", "local notes");
  await using api = startResponsesApi([
    { calls: [{ name: "filesystem__write_file", args: { path: "out.txt", content: "hi" } }] },
    {
      calls: [{
        name: "pml__execute",
        args: {
          code: `const text = await mcp.filesystem.read_file({ path: "notes.txt" });
                 const listing = await mcp.filesystem.list_directory({ path: "." });
                 return { text, listing };`,
        },
      }],
    },
    { text: "done" },
  ]);
  const run = await runCodex(ws, api, trap);
  assertEquals(run.code, 0, run.out);
  assertEquals(api.turns.length, 3, run.out);
  // Codex answers `decline` at once: still a no, and PML writes nothing, but the result and the
  // audit say that the client declined (in how many ms) and that nobody was asked.
  const refused = callOutputs(api.turns[1]).get("filesystem__write_file") ?? "";
  assertStringIncludes(refused, "the client declined the question in");
  assertStringIncludes(refused, "nobody was asked");
  assert(!refused.includes("the user refused"), refused);
  assert(!(await Deno.stat(join(ws.dir, "out.txt")).catch(() => false)), "nothing written");
  const audit = ws.read(".pml/audit.log").trim().split("\n").map((l) => JSON.parse(l));
  const decided = audit.find((l) => l.event === "approval_decided");
  assertEquals([decided?.by, decided?.decision, decided?.via], ["client", "no", "elicitation"]);
  assert(typeof decided?.declined_in_ms === "number", JSON.stringify(decided));
  assert(!audit.some((l) => l.by === "user"), JSON.stringify(audit));
  const executed = JSON.parse(
    /\{"status".*\}/s.exec(callOutputs(api.turns[2]).get("pml__execute") ?? "")?.[0] ?? "{}",
  );
  assertEquals(executed.status, "success", JSON.stringify(executed));
  assertEquals(executed.result.text, "local notes");
  assertStringIncludes(JSON.stringify(executed.result.listing), "notes.txt");
  assertEquals(
    executed.calls.map((c: { tool: string }) => c.tool),
    ["filesystem:read_file", "filesystem:list_directory"],
  );
  assertHermetic(api, trap);
});

Deno.test("codex exec: a tool denied by .pml.json is not offered; from pml:execute it is refused as denied, never as unknown", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem", "pml"], ask: [], deny: ["filesystem:create_directory"] },
  });
  await using api = startResponsesApi([
    {
      calls: [{
        name: "pml__execute",
        args: {
          code: `try { await mcp.filesystem.create_directory({ path: "made" }); return "created"; }
                 catch (e) { return String(e?.message ?? e); }`,
        },
      }],
    },
    { calls: [{ name: "filesystem__create_directory", args: { path: "made" } }] },
    { text: "done" },
  ]);
  const run = await runCodex(ws, api, trap);
  assertEquals(run.code, 0, run.out);
  assertEquals(api.turns.length, 3, run.out);
  const offered = namespaceFunctions(api.turns[0]);
  assert(offered.has("filesystem__read_file"));
  assert(!offered.has("filesystem__create_directory"), "a denied tool is not listed");
  const executed = callOutputs(api.turns[1]).get("pml__execute")!;
  assertStringIncludes(executed, "denied by .pml.json");
  assert(!/unknown tool/i.test(executed), executed);
  // The model calls the unlisted name anyway: Codex itself answers, pml never runs it.
  assertEquals(
    callOutputs(api.turns[2]).get("filesystem__create_directory"),
    "unsupported call: mcp__pmlfilesystem__create_directory",
  );
  assert(!(await Deno.stat(join(ws.dir, "made")).catch(() => false)), "nothing created");
  assertHermetic(api, trap);
});

Deno.test("codex exec: a tool id past 64 characters reaches the model as pml shortened it (54) and calls back", async () => {
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
  await using api = startResponsesApi([
    (req) => {
      offered = [...namespaceFunctions(req).keys()].find((n) => n.startsWith(ns)) ?? "";
      return offered ? { calls: [{ name: offered, args: {} }] } : { text: "no such tool" };
    },
    { text: "done" },
  ]);
  const run = await runCodex(ws, api, trap);
  assertEquals(run.code, 0, run.out);
  assertEquals(offered.length, 54, offered);
  assertMatch(offered, /^[A-Za-z0-9_-]{54}$/);
  assertStringIncludes(callOutputs(api.turns[1]).get(offered)!, "long name ok");
  assertHermetic(api, trap);
});

Deno.test("codex exec over HTTP (pml serve): tools with schemas, a read, and an ask write continued in the same session", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    approvals: "agent",
    permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
  });
  ws.write("notes.txt", "served notes");
  await using serve = await spawnServe(ws, { DENO_NO_UPDATE_CHECK: "1" });
  await using api = startResponsesApi([
    {
      calls: [
        { name: "filesystem__read_file", args: { path: "notes.txt" } },
        { name: "filesystem__write_file", args: { path: "out.txt", content: "over http" } },
      ],
    },
    (request) => {
      const id = workflowId(callOutputs(request).get("filesystem__write_file") ?? "");
      return { calls: [{ name: "pml__continue", args: { workflow_id: id, decision: "yes" } }] };
    },
    { text: "done" },
  ], { review: () => ({ outcome: "allow", risk_level: "low" }) });
  const run = await runCodex(ws, api, trap, { mode: "review", server: { url: serve.url } });
  assertEquals(run.code, 0, run.out);
  assertEquals(api.turns.length, 3, run.out);
  const offered = namespaceFunctions(api.turns[0]);
  assertEquals(offered.get("filesystem__read_file")?.parameters?.required, ["path"]);
  // Codex's reviewer is asked before the write and pml__continue; not before the read, which pml
  // marks read-only (`readOnlyHint`).
  assertEquals(api.reviews.length, 2, run.out);
  assertStringIncludes(callOutputs(api.turns[1]).get("filesystem__read_file")!, "served notes");
  assertStringIncludes(callOutputs(api.turns[2]).get("pml__continue")!, "out.txt");
  assertEquals(ws.read("out.txt"), "over http");
  const log = audit(ws);
  assertStringIncludes(log, '"elicitation":"cancel"');
  assert(!log.includes('"by":"user"'), log);
  assertHermetic(api, trap);
});

Deno.test("codex exec in a trusted project runs pml from the .codex/config.toml of `pml init --client codex --api-key`: a cloud tool with its real schema, a read, and an ask write continued after approval_required", async () => {
  await using trap = startEgressTrap();
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace();
  ws.write("notes.txt", "project notes");
  const init = await new Deno.Command(PML_BIN, {
    args: ["init", "--yes", "--client", "codex", "--api-key", cloud.key, "--cloud-url", cloud.url],
    cwd: ws.dir,
    env: { PATH: pathWithoutPml(), HOME: ws.home, DENO_NO_UPDATE_CHECK: "1" },
    clearEnv: true,
    stdin: "null",
  }).output();
  assertEquals(init.code, 0, new TextDecoder().decode(init.stderr));
  assertStringIncludes(ws.read(".codex/config.toml"), "[mcp_servers.pml]");
  // The model answers the write's approval itself here (the human path: claude_test.ts).
  const pmlJson = JSON.parse(ws.read(".pml.json"));
  ws.write(".pml.json", JSON.stringify({ ...pmlJson, approvals: "agent" }, null, 2));
  await using api = startResponsesApi([
    {
      calls: [
        { name: "filesystem__read_file", args: { path: "notes.txt" } },
        { name: "math__sum", args: { numbers: [4, 5] } },
        { name: "filesystem__write_file", args: { path: "out.txt", content: "from init" } },
      ],
    },
    (request) => {
      const id = workflowId(callOutputs(request).get("filesystem__write_file") ?? "");
      return { calls: [{ name: "pml__continue", args: { workflow_id: id, decision: "yes" } }] };
    },
    { text: "done" },
  ], { review: () => ({ outcome: "allow", risk_level: "low" }) });
  const run = await runCodex(ws, api, trap, { mode: "review", server: null });
  assertEquals(run.code, 0, run.out);
  const offered = namespaceFunctions(api.turns[0]);
  assert(offered.has("filesystem__read_file"), "pml's tools offered");
  const served = await cloudTools(cloud);
  assertEquals(
    offered.get("math__sum")?.parameters,
    asCodexSends(served.get("math__sum")?.inputSchema),
  );
  assertStringIncludes(callOutputs(api.turns[1]).get("filesystem__read_file")!, "project notes");
  assertStringIncludes(callOutputs(api.turns[1]).get("math__sum")!, "9");
  assertEquals(cloud.calls().map((c) => c.tool), ["math__sum"]);
  assertEquals(ws.read("out.txt"), "from init");
  assertHermetic(api, trap);
});
