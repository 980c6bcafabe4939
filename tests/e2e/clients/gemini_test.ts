/**
 * Real client, end to end: Gemini CLI (`gemini -p`, the pinned devDependency) drives `pml stdio`.
 * Its model is the scripted Gemini API of `_gemini_api.ts`; each test scripts the model's function
 * calls and reads what Gemini CLI sent it. Private HOME, proxies on the egress trap.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../../packages/pml/src/testing/workspace.ts";
import { startCloud } from "../_cloud.ts";
import { PML_BIN } from "../_spawn.ts";
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
const NO_UPSTREAM = "http://127.0.0.1:9";

/** Gemini CLI's name for a PML tool: `mcp_<server>_<exposed name>`. */
const tool = (exposed: string) => `mcp_pml_${exposed}`;

async function runGemini(
  ws: { dir: string; home: string },
  api: GeminiApi,
  trap: EgressTrap,
  pmlEnv: Record<string, string> = {},
) {
  Deno.mkdirSync(join(ws.home, ".gemini"), { recursive: true });
  Deno.writeTextFileSync(
    join(ws.home, ".gemini", "settings.json"),
    JSON.stringify({
      security: { auth: { selectedType: "gemini-api-key" } },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
    }),
  );
  // Gemini hides secret-looking variables (PML_API_KEY) from MCP servers: the entry names them.
  Deno.mkdirSync(join(ws.dir, ".gemini"), { recursive: true });
  Deno.writeTextFileSync(
    join(ws.dir, ".gemini", "settings.json"),
    JSON.stringify({
      mcpServers: {
        pml: {
          command: PML_BIN,
          args: ["stdio"],
          env: { PML_WORKSPACE: ws.dir, DENO_NO_UPDATE_CHECK: "1", ...pmlEnv },
        },
      },
    }),
  );
  const out = await new Deno.Command(GEMINI, {
    args: ["-p", "Do the task.", "--model", "gemini-2.5-flash", "--yolo"],
    cwd: ws.dir,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: ws.home,
      GEMINI_API_KEY: "scripted",
      GOOGLE_GEMINI_BASE_URL: api.url,
      GEMINI_CLI_TRUST_WORKSPACE: "true",
      DENO_NO_UPDATE_CHECK: "1",
      ...trap.env,
    },
    clearEnv: true,
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test("gemini -p: the model gets pml's tools with real schemas (cloud ones too); a read and cloud calls work", async () => {
  await using trap = startEgressTrap();
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem:read_file", "json", "math"], ask: [], deny: [] },
  });
  ws.write("notes.txt", "gemini notes");
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
  const run = await runGemini(ws, api, trap, { PML_API_KEY: cloud.key, PML_CLOUD_URL: cloud.url });
  assertEquals(run.code, 0, run.out);
  const offered = declarations(api.turns[0]);
  const served = await cloudTools(cloud);
  for (
    const [exposed, real] of [["math__sum", served.get("math__sum")!], [
      "json__parse",
      served.get("json__parse")!,
    ]] as const
  ) {
    const decl = offered.get(tool(exposed));
    assert(decl, `${exposed} offered: ${[...offered.keys()].join(", ")}`);
    assertEquals(decl.description, real.description);
    // Gemini CLI adds its own `wait_for_previous`; every real property arrives unchanged.
    for (const [name, schema] of Object.entries(real.inputSchema.properties ?? {})) {
      assertEquals(decl.parametersJsonSchema?.properties?.[name], schema, `${exposed}.${name}`);
    }
    assertEquals(decl.parametersJsonSchema?.required, real.inputSchema.required);
  }
  assertEquals(
    offered.get(tool("filesystem__read_file"))?.parametersJsonSchema?.required,
    ["path"],
  );
  const results = functionResponses(api.turns[1]);
  assertStringIncludes(results.get(tool("filesystem__read_file"))!, "gemini notes");
  assertStringIncludes(results.get(tool("math__sum"))!, "6.5");
  assertStringIncludes(results.get(tool("json__parse"))!, "answer");
  assertEquals(trap.attempts, []);
  for (const r of api.requests) assert(r.path.startsWith("/v1beta/models/"), r.path);
});

Deno.test("gemini -p: an ask write answers approval_required, the model continues it; pml:execute with two local tools", async () => {
  await using trap = startEgressTrap();
  await using ws = tempWorkspace({
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
      const response = functionResponses(request).get(tool("filesystem__write_file")) ?? "";
      const id = /workflow_id\\?"\s*:\s*\\?"([0-9a-f-]{36})/.exec(response)?.[1];
      assert(id, `approval_required expected, got ${response}`);
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
  assertStringIncludes(executed, "local notes");
  assertStringIncludes(executed, "out.txt");
  const audit = (() => {
    try {
      return ws.read(".pml/audit.log");
    } catch {
      return "";
    }
  })();
  assert(!audit.includes('"by":"user"'), audit);
  assertEquals(trap.attempts, []);
});
