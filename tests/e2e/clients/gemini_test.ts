/**
 * Real client, end to end: Gemini CLI (`gemini -p`, the pinned devDependency) drives `pml stdio`
 * (and `pml serve` over HTTP). Its model is the scripted Gemini API of `_gemini_api.ts`; each test
 * scripts the model's function calls and reads what Gemini CLI sent it (function declarations,
 * function responses). Private HOME, proxies on the egress trap; the tests assert that only
 * loopback was contacted.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../../packages/pml/src/testing/workspace.ts";
import { startCloud } from "../_cloud.ts";
import { spawnServe } from "../_serve.ts";
import { connectStdio, PML_BIN, runPml } from "../_spawn.ts";
import { cloudTools } from "./_cloud_tools.ts";
import {
  declarations,
  functionResponses,
  type GeminiApi,
  type ScriptedStep,
  startGeminiApi,
} from "./_gemini_api.ts";
import { type EgressTrap, startEgressTrap } from "./_egress_trap.ts";

const GEMINI = join(import.meta.dirname!, "..", "..", "..", "node_modules", ".bin", "gemini");
const NO_UPSTREAM = "http://127.0.0.1:9"; // the cloud's http entries exist but are never called

/** Gemini CLI's name for a PML tool: `mcp_<server>_<exposed name>`. */
const tool = (exposed: string) => `mcp_pml_${exposed}`;

/**
 * How Gemini CLI lets PML's tools run headless:
 * - `yolo`: `--yolo`, every tool call is approved by Gemini;
 * - `trust`: the server entry says `"trust": true` (Gemini skips its confirmation for that server);
 * - `default`: neither.
 */
type Approval = "yolo" | "trust" | "default";

/** The server entry: `pml stdio` for the workspace, or a URL (`pml serve`). */
type Server = { stdio: Record<string, string> } | { httpUrl: string };

/** Gemini's user settings: API key auth, no update checks, no usage statistics, no telemetry. */
function writeUserSettings(home: string) {
  Deno.mkdirSync(join(home, ".gemini"), { recursive: true });
  Deno.writeTextFileSync(
    join(home, ".gemini", "settings.json"),
    JSON.stringify({
      security: { auth: { selectedType: "gemini-api-key" } },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
    }),
  );
}

/** The project's `.gemini/settings.json` naming pml, in Gemini's own syntax. */
function writeProjectSettings(
  ws: { dir: string },
  server: Server,
  trust: boolean,
  trap: EgressTrap,
) {
  const entry = "httpUrl" in server ? { httpUrl: server.httpUrl } : {
    command: PML_BIN,
    args: ["stdio"],
    // Gemini hides secret-looking variables (PML_API_KEY) from MCP servers unless named here.
    // The trap's proxy variables too, so that anything pml itself sends off loopback lands there.
    env: { PML_WORKSPACE: ws.dir, DENO_NO_UPDATE_CHECK: "1", ...trap.env, ...server.stdio },
  };
  Deno.mkdirSync(join(ws.dir, ".gemini"), { recursive: true });
  Deno.writeTextFileSync(
    join(ws.dir, ".gemini", "settings.json"),
    JSON.stringify({ mcpServers: { pml: { ...entry, ...(trust ? { trust: true } : {}) } } }),
  );
}

/** The environment of a Gemini CLI run: private HOME, the scripted API, the trap. */
function geminiEnv(home: string, trap: EgressTrap, api?: GeminiApi) {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: home,
    GEMINI_API_KEY: "scripted",
    ...(api ? { GOOGLE_GEMINI_BASE_URL: api.url } : {}),
    GEMINI_CLI_TRUST_WORKSPACE: "true",
    DENO_NO_UPDATE_CHECK: "1",
    ...trap.env,
  };
}

async function output(cmd: Deno.Command) {
  const out = await cmd.output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

async function runGemini(
  ws: { dir: string; home: string },
  api: GeminiApi,
  trap: EgressTrap,
  opts: { approval?: Approval; server?: Server } = {},
) {
  const approval = opts.approval ?? "yolo";
  writeUserSettings(ws.home);
  writeProjectSettings(ws, opts.server ?? { stdio: {} }, approval === "trust", trap);
  return await output(
    new Deno.Command(GEMINI, {
      args: [
        "-p",
        "Do the task.",
        "--model",
        "gemini-2.5-flash",
        ...(approval === "yolo" ? ["--yolo"] : []),
      ],
      cwd: ws.dir,
      env: geminiEnv(ws.home, trap, api),
      clearEnv: true,
      stdin: "null",
    }),
  );
}

/** PATH without any other `pml`, so that `pml init` names this checkout's launcher. */
function pathWithoutPml(): string {
  return (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":")
    .filter((d) => !existsSync(join(d, "pml"))).join(":");
}

/** Only the scripted API on loopback was asked, and nothing reached the trap. */
function assertHermetic(api: GeminiApi, trap: EgressTrap) {
  assertEquals(trap.attempts, [], "nothing may leave loopback");
  for (const r of api.requests) assert(r.path.startsWith("/v1beta/models/"), r.path);
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

/** The audit log of the workspace ("" when there is none). */
function audit(ws: { read(rel: string): string }): string {
  try {
    return ws.read(".pml/audit.log");
  } catch {
    return "";
  }
}

/** The `workflow_id` of an `approval_required` function response. */
function workflowId(response: string): string {
  const id = /workflow_id\\?"\s*:\s*\\?"([0-9a-f-]{36})/.exec(response)?.[1];
  assert(id, `approval_required expected, got ${response}`);
  return id;
}

Deno.test("gemini -p: the model gets every pml tool as mcp_pml_<name> with pml's own descriptions and schemas (cloud ones too); a read and cloud calls work", async () => {
  await using trap = startEgressTrap();
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem:read_file", "json", "math"], ask: [], deny: [] },
  });
  ws.write("notes.txt", "gemini notes");
  const cloudEnv = { PML_API_KEY: cloud.key, PML_CLOUD_URL: cloud.url };
  await using api = startGeminiApi([
    {
      calls: [
        { name: tool("filesystem__read_file"), args: { path: "notes.txt" } },
        { name: tool("math__sum"), args: { numbers: [1, 2, 3.5] } },
        { name: tool("json__parse"), args: { text: '{"answer":42}' } },
      ],
    },
    { text: "done" },
  ]);
  const run = await runGemini(ws, api, trap, { server: { stdio: cloudEnv } });
  assertEquals(run.code, 0, run.out);
  assertEquals(api.turns.length, 2, run.out);

  await using direct = await connectStdio(ws, { env: cloudEnv });
  const listed = (await direct.listTools()).tools;
  const offered = declarations(api.turns[0]);
  const pmlNames = [...offered.keys()].filter((n) => n.startsWith("mcp_pml_")).sort();
  assertEquals(pmlNames, listed.map((t) => tool(t.name)).sort());
  for (const t of listed) {
    const decl = offered.get(tool(t.name))!;
    assertEquals(decl.description, t.description, t.name);
    // Gemini CLI adds one property of its own; everything else arrives unchanged.
    assertEquals(
      schemaDiff(t.inputSchema, decl.parametersJsonSchema),
      [`properties.wait_for_previous: undefined → ${
        JSON.stringify(decl.parametersJsonSchema?.properties?.wait_for_previous)
      }`],
      t.name,
    );
  }
  assertEquals(
    Object.keys(
      offered.get(tool("math__sum"))!.parametersJsonSchema!.properties!.wait_for_previous!,
    ),
    ["type", "description"],
  );
  // The cloud tools carry what pml-server lists, not an any-object stand-in.
  const served = await cloudTools(cloud);
  for (const name of ["math__sum", "json__parse"]) {
    const decl = offered.get(tool(name))!;
    assertEquals(decl.description, served.get(name)!.description);
    const { wait_for_previous: _, ...properties } = decl.parametersJsonSchema!.properties!;
    assertEquals(properties, served.get(name)!.inputSchema.properties, name);
    assertEquals(decl.parametersJsonSchema?.required, served.get(name)!.inputSchema.required);
  }
  assertEquals(offered.get(tool("math__sum"))?.parametersJsonSchema?.required, ["numbers"]);
  // PML's instructions reach the model in the first user content, as the server's instructions.
  const context = api.turns[0].contents.flatMap((c) => c.parts.map((p) => String(p.text ?? "")))
    .join("\n");
  assertStringIncludes(context, "instructions provided by the tool server 'pml'");
  assertStringIncludes(context, direct.getInstructions()!);

  const results = functionResponses(api.turns[1]);
  assertStringIncludes(results.get(tool("filesystem__read_file"))!, "gemini notes");
  assertStringIncludes(results.get(tool("math__sum"))!, "6.5");
  assertStringIncludes(results.get(tool("json__parse"))!, "answer");
  // Gemini wraps every MCP result for the model.
  assertStringIncludes(results.get(tool("filesystem__read_file"))!, "<untrusted_context>");
  assertEquals(cloud.calls().map((c) => c.tool).sort(), ["json__parse", "math__sum"]);
  assertHermetic(api, trap);
});

Deno.test("gemini -p: an ask write answers approval_required (Gemini declares no elicitation), the model continues it; pml:execute with two local tools", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    approvals: "agent",
    permissions: {
      allow: ["filesystem:read_file", "filesystem:list_directory", "pml"],
      ask: ["filesystem:write_file"],
      deny: [],
    },
  });
  ws.write("notes.txt", "local notes");
  const steps: ScriptedStep[] = [
    { calls: [{ name: tool("filesystem__write_file"), args: { path: "out.txt", content: "hi" } }] },
    (request) => {
      const id = workflowId(functionResponses(request).get(tool("filesystem__write_file")) ?? "");
      return {
        calls: [{ name: tool("pml__continue"), args: { workflow_id: id, decision: "yes" } }],
      };
    },
    {
      calls: [{
        name: tool("pml__execute"),
        args: {
          code: `const text = await mcp.filesystem.read_file({ path: "notes.txt" });
                 const listing = await mcp.filesystem.list_directory({ path: "." });
                 return { text, listing };`,
        },
      }],
    },
    { text: "done" },
  ];
  await using api = startGeminiApi(steps);
  const run = await runGemini(ws, api, trap);
  assertEquals(run.code, 0, run.out);
  assertEquals(api.turns.length, 4, run.out);
  assertEquals(ws.read("out.txt"), "hi");
  const executed = functionResponses(api.turns[3]).get(tool("pml__execute")) ?? "";
  assertStringIncludes(executed, '\\"status\\":\\"success\\"');
  assertStringIncludes(executed, "local notes");
  assertStringIncludes(executed, "out.txt");
  assertStringIncludes(executed, "filesystem:list_directory");
  assert(!audit(ws).includes('"by":"user"'), audit(ws));
  assertHermetic(api, trap);
});

Deno.test("gemini -p: a write waits for the human; the text Gemini gives the model names the approval id and `pml approve ID`, never a link; after `pml approve` in a terminal the model's pml__continue writes", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
  });
  let first = "";
  let early = "";
  let id = "";
  const cont = () => ({
    calls: [{ name: tool("pml__continue"), args: { workflow_id: id, decision: "yes" } }],
  });
  const steps: ScriptedStep[] = [
    { calls: [{ name: tool("filesystem__write_file"), args: { path: "out.txt", content: "hi" } }] },
    (request) => {
      first = functionResponses(request).get(tool("filesystem__write_file")) ?? "";
      id = workflowId(first);
      return cont();
    },
    async (request) => {
      early = functionResponses(request).get(tool("pml__continue")) ?? "";
      // Meanwhile the human decides in a terminal of the workspace.
      const out = await runPml(ws, ["approve", id]);
      assertEquals(out.code, 0, out.stderr);
      return cont();
    },
    { text: "done" },
  ];
  await using api = startGeminiApi(steps);
  const run = await runGemini(ws, api, trap);
  assertEquals(run.code, 0, run.out);
  assertEquals(api.turns.length, 4, run.out);
  assert(!/token=|http:\/\/127/.test(first), first);
  assertStringIncludes(early, "waiting for a human");
  assertStringIncludes(early, `pml approve ${id}`);
  assert(!/token=|http:\/\/127/.test(early), early);
  assertEquals(ws.read("out.txt"), "hi");
  assertStringIncludes(audit(ws), `"decision":"yes","by":"user","via":"cli"`);
  assertHermetic(api, trap);
});

Deno.test("gemini -p: without --yolo, pml's tools reach the model only when the server entry says trust: true", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
  ws.write("notes.txt", "trusted notes");
  const offered: string[][] = [];
  const step: ScriptedStep = (request) => {
    offered.push([...declarations(request).keys()].filter((n) => n.startsWith("mcp_pml_")));
    return offered.at(-1)!.length
      ? { calls: [{ name: tool("filesystem__read_file"), args: { path: "notes.txt" } }] }
      : { text: "no pml tools" };
  };
  await using untrusted = startGeminiApi([step]);
  const plain = await runGemini(ws, untrusted, trap, { approval: "default" });
  assertEquals(plain.code, 0, plain.out);
  assertEquals(offered[0], [], "headless default mode offers no tool that needs confirmation");
  await using trusted = startGeminiApi([step, { text: "done" }]);
  const run = await runGemini(ws, trusted, trap, { approval: "trust" });
  assertEquals(run.code, 0, run.out);
  assert(offered[1].includes(tool("filesystem__write_file")), offered[1].join(", "));
  assertStringIncludes(
    functionResponses(trusted.turns[1]).get(tool("filesystem__read_file"))!,
    "trusted notes",
  );
  assertHermetic(untrusted, trap);
  assertHermetic(trusted, trap);
});

Deno.test("gemini -p: a tool denied by .pml.json is not offered; from pml:execute it is refused as denied, never as unknown", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem", "pml"], ask: [], deny: ["filesystem:create_directory"] },
  });
  await using api = startGeminiApi([
    {
      calls: [{
        name: tool("pml__execute"),
        args: {
          code: `try { await mcp.filesystem.create_directory({ path: "made" }); return "created"; }
                 catch (e) { return String(e?.message ?? e); }`,
        },
      }],
    },
    { calls: [{ name: tool("filesystem__create_directory"), args: { path: "made" } }] },
    { text: "done" },
  ]);
  const run = await runGemini(ws, api, trap);
  assertEquals(run.code, 0, run.out);
  assertEquals(api.turns.length, 3, run.out);
  const offered = declarations(api.turns[0]);
  assert(offered.has(tool("filesystem__read_file")));
  assert(!offered.has(tool("filesystem__create_directory")), "a denied tool is not listed");
  const executed = functionResponses(api.turns[1]).get(tool("pml__execute"))!;
  assertStringIncludes(executed, "denied by .pml.json");
  assert(!/unknown tool/i.test(executed), executed);
  // The model calls the unlisted name anyway: Gemini itself answers, pml never runs it.
  assertStringIncludes(
    functionResponses(api.turns[2]).get(tool("filesystem__create_directory"))!,
    `Tool \\"${tool("filesystem__create_directory")}\\" not found`,
  );
  assert(!(await Deno.stat(join(ws.dir, "made")).catch(() => false)), "nothing created");
  assertHermetic(api, trap);
});

Deno.test("gemini -p: a tool id past 64 characters, shortened by pml to 54, fits Gemini's prefix uncut, and the call reaches the tool", async () => {
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
  await using api = startGeminiApi([
    (req) => {
      offered = [...declarations(req).keys()].find((n) => n.includes("reporting")) ?? "";
      return offered ? { calls: [{ name: offered, args: {} }] } : { text: "no such tool" };
    },
    { text: "done" },
  ]);
  const run = await runGemini(ws, api, trap);
  assertEquals(run.code, 0, run.out);
  // pml's name is 54 characters; with `mcp_pml_` 62, under Gemini's 63: Gemini does not cut it
  // (a 64-character name became 72 and was cut to its first and last 30 characters around "...").
  await using direct = await connectStdio(ws);
  const id = (await direct.listTools()).tools.map((t) => t.name).find((n) => n.startsWith(ns))!;
  assertEquals(id.length, 54, id);
  assertEquals(offered, tool(id));
  assert(!run.out.includes("to fit within the 64 character limit"), run.out);
  assertStringIncludes(functionResponses(api.turns[1]).get(offered)!, "long name ok");
  assertHermetic(api, trap);
});

Deno.test("gemini -p over HTTP (pml serve, httpUrl): tools with schemas, a read, and an ask write continued in the same session", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
    approvals: "agent",
    permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
  });
  ws.write("notes.txt", "served notes");
  await using serve = await spawnServe(ws, { DENO_NO_UPDATE_CHECK: "1" });
  await using api = startGeminiApi([
    {
      calls: [
        { name: tool("filesystem__read_file"), args: { path: "notes.txt" } },
        { name: tool("filesystem__write_file"), args: { path: "out.txt", content: "over http" } },
      ],
    },
    (request) => {
      const id = workflowId(functionResponses(request).get(tool("filesystem__write_file")) ?? "");
      return {
        calls: [{ name: tool("pml__continue"), args: { workflow_id: id, decision: "yes" } }],
      };
    },
    { text: "done" },
  ]);
  const run = await runGemini(ws, api, trap, { server: { httpUrl: serve.url } });
  assertEquals(run.code, 0, run.out);
  assertEquals(api.turns.length, 3, run.out);
  const offered = declarations(api.turns[0]);
  assertEquals(offered.get(tool("filesystem__read_file"))?.parametersJsonSchema?.required, [
    "path",
  ]);
  assertStringIncludes(
    functionResponses(api.turns[1]).get(tool("filesystem__read_file"))!,
    "served notes",
  );
  assertEquals(ws.read("out.txt"), "over http");
  assertHermetic(api, trap);
});

Deno.test("gemini mcp list: a .gemini/settings.json entry for pml serve (httpUrl) is Connected, one whose command fails is Disconnected", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({ permissions: { allow: [], ask: [], deny: [] } });
  await using serve = await spawnServe(ws, { DENO_NO_UPDATE_CHECK: "1" });
  writeUserSettings(ws.home);
  Deno.mkdirSync(join(ws.dir, ".gemini"));
  Deno.writeTextFileSync(
    join(ws.dir, ".gemini", "settings.json"),
    JSON.stringify({
      mcpServers: {
        pml: { httpUrl: serve.url },
        broken: { command: PML_BIN, args: ["no-such-command"] },
      },
    }),
  );
  const list = await output(
    new Deno.Command(GEMINI, {
      args: ["mcp", "list"],
      cwd: ws.dir,
      env: geminiEnv(ws.home, trap),
      clearEnv: true,
      stdin: "null",
    }),
  );
  assertEquals(list.code, 0, list.out);
  const line = (name: string) => list.out.split("\n").find((l) => l.includes(`${name}:`)) ?? "";
  assertStringIncludes(line("pml"), `${serve.url} (http) - Connected`);
  assertStringIncludes(line("broken"), "Disconnected");
  assertEquals(trap.attempts, []);
});

Deno.test("gemini -p with the .gemini/settings.json of `pml init --client gemini --api-key`: cloud tools with real schemas are called, a read works, an ask write is continued", async () => {
  await using trap = startEgressTrap();
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace();
  ws.write("notes.txt", "init notes");
  const init = await output(
    new Deno.Command(PML_BIN, {
      args: [
        "init",
        "--yes",
        "--client",
        "gemini",
        "--api-key",
        cloud.key,
        "--cloud-url",
        cloud.url,
      ],
      cwd: ws.dir,
      env: { PATH: pathWithoutPml(), HOME: ws.home, DENO_NO_UPDATE_CHECK: "1" },
      clearEnv: true,
      stdin: "null",
    }),
  );
  assertEquals(init.code, 0, init.out);
  // The model answers the write's approval itself here (the human path: claude_test.ts).
  const pmlJson = JSON.parse(ws.read(".pml.json"));
  ws.write(".pml.json", JSON.stringify({ ...pmlJson, approvals: "agent" }, null, 2));
  writeUserSettings(ws.home);
  await using api = startGeminiApi([
    {
      calls: [
        { name: tool("filesystem__read_file"), args: { path: "notes.txt" } },
        { name: tool("math__sum"), args: { numbers: [4, 5] } },
        { name: tool("filesystem__write_file"), args: { path: "out.txt", content: "init" } },
      ],
    },
    (request) => {
      const id = workflowId(functionResponses(request).get(tool("filesystem__write_file")) ?? "");
      return {
        calls: [{ name: tool("pml__continue"), args: { workflow_id: id, decision: "yes" } }],
      };
    },
    { text: "done" },
  ]);
  const run = await output(
    new Deno.Command(GEMINI, {
      // No --yolo: the entry's "trust": true is what lets PML's tools reach the model.
      args: ["-p", "Do the task.", "--model", "gemini-2.5-flash"],
      cwd: ws.dir,
      env: geminiEnv(ws.home, trap, api),
      clearEnv: true,
      stdin: "null",
    }),
  );
  assertEquals(run.code, 0, run.out);
  assertEquals(api.turns.length, 3, run.out);
  const served = await cloudTools(cloud);
  const sum = declarations(api.turns[0]).get(tool("math__sum"));
  assert(sum, "the cloud's math__sum is offered");
  assertEquals(sum.parametersJsonSchema?.required, served.get("math__sum")!.inputSchema.required);
  const results = functionResponses(api.turns[1]);
  assertStringIncludes(results.get(tool("filesystem__read_file"))!, "init notes");
  assertStringIncludes(results.get(tool("math__sum"))!, "9");
  assertEquals(ws.read("out.txt"), "init");
  assertEquals(cloud.calls().map((c) => c.tool), ["math__sum"]);
  assertHermetic(api, trap);
});
