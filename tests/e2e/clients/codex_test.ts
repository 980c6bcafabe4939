/**
 * Real client, end to end: Codex (`codex exec`, the pinned devDependency) drives `pml stdio`. Its
 * model is the scripted Responses API of `_responses_api.ts`. Private HOME and CODEX_HOME, proxies
 * on the egress trap.
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
  callOutputs,
  namespaceFunctions,
  type ResponsesApi,
  startResponsesApi,
} from "./_responses_api.ts";
import { type EgressTrap, startEgressTrap } from "./_egress_trap.ts";

const CODEX = join(import.meta.dirname!, "..", "..", "..", "node_modules", ".bin", "codex");
const NO_UPSTREAM = "http://127.0.0.1:9";

const toml = (v: string) => JSON.stringify(v);

/**
 * Codex itself contacts its vendor's hosts at start (plugin and app listings) whatever its config
 * says; the trap refuses them and Codex works on. Anything else reaching the trap (PML, a sandbox)
 * fails the test.
 */
const CODEX_HOSTS = /^CONNECT (github\.com|api\.github\.com|chatgpt\.com|ab\.chatgpt\.com):443 /;

function assertCodexOnlyEgress(trap: EgressTrap) {
  const other = trap.attempts.filter((a) => !CODEX_HOSTS.test(a));
  assertEquals(other, [], "only Codex's own start-up requests may reach the trap");
}

async function runCodex(
  ws: { dir: string; home: string },
  api: ResponsesApi,
  trap: EgressTrap,
  pmlEnv: Record<string, string> = {},
) {
  const codexHome = join(ws.home, "codex");
  Deno.mkdirSync(codexHome, { recursive: true });
  const env = { PML_WORKSPACE: ws.dir, DENO_NO_UPDATE_CHECK: "1", ...pmlEnv };
  Deno.writeTextFileSync(
    join(codexHome, "config.toml"),
    [
      `model = "gpt-5"`,
      `model_provider = "scripted"`,
      `[model_providers.scripted]`,
      `name = "scripted"`,
      `base_url = ${toml(api.url)}`,
      `env_key = "SCRIPTED_KEY"`,
      `wire_api = "responses"`,
      `[mcp_servers.pml]`,
      `command = ${toml(PML_BIN)}`,
      `args = ["stdio"]`,
      `env = { ${Object.entries(env).map(([k, v]) => `${k} = ${toml(v)}`).join(", ")} }`,
    ].join("\n") + "\n",
  );
  const out = await new Deno.Command(CODEX, {
    // Codex's own approval of MCP calls cannot be answered headless: PML's `.pml.json` decides.
    args: ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "Do it."],
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

Deno.test("codex exec: the model gets pml's tools with real schemas (cloud ones too); a read and cloud calls work", async () => {
  await using trap = startEgressTrap();
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem:read_file", "json", "math"], ask: [], deny: [] },
  });
  ws.write("notes.txt", "codex notes");
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
  const run = await runCodex(ws, api, trap, { PML_API_KEY: cloud.key, PML_CLOUD_URL: cloud.url });
  assertEquals(run.code, 0, run.out);
  const offered = namespaceFunctions(api.requests[0]);
  const served = await cloudTools(cloud);
  for (const name of ["math__sum", "json__parse"]) {
    const fn = offered.get(name);
    assert(fn, `${name} offered: ${[...offered.keys()].join(", ")}`);
    assertEquals(fn.description, served.get(name)!.description);
    assertEquals(fn.parameters?.properties, served.get(name)!.inputSchema.properties);
    assertEquals(fn.parameters?.required, served.get(name)!.inputSchema.required);
  }
  assertEquals(offered.get("filesystem__read_file")?.parameters?.required, ["path"]);
  const outputs = callOutputs(api.requests[1]);
  assertStringIncludes(outputs.get("filesystem__read_file")!, "codex notes");
  assertStringIncludes(outputs.get("math__sum")!, "5");
  assertStringIncludes(outputs.get("json__parse")!, "answer");
  assertCodexOnlyEgress(trap);
});

Deno.test("codex exec: it declines PML's elicitation by its own policy, so an ask write is refused cleanly; pml:execute with two local tools", async () => {
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
  assertEquals(api.requests.length, 3, run.out);
  // Codex exec answers every elicitation with `decline` (its approval policy rejects MCP
  // elicitations it cannot show): PML takes a decline as the user's no, and writes nothing.
  const refused = callOutputs(api.requests[1]).get("filesystem__write_file") ?? "";
  assertStringIncludes(refused, "the user refused");
  assert(!(await Deno.stat(join(ws.dir, "out.txt")).catch(() => false)), "nothing written");
  const executed = callOutputs(api.requests[2]).get("pml__execute") ?? "";
  assertStringIncludes(executed, "local notes");
  assertStringIncludes(executed, "notes.txt");
  assertCodexOnlyEgress(trap);
});
