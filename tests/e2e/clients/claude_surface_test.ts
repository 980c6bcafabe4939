/**
 * Real client, end to end: Claude Code (`claude -p`) surfaces the resources of a server behind PML
 * (docs/surface.md). server-everything over Streamable HTTP is a remote `private_mcps` server of
 * the workspace; Claude Code, given only `pml stdio`, offers its model the MCP resource tools, and
 * the scripted model reads a resource of everything through PML.
 */
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../../packages/pml/src/testing/workspace.ts";
import { startEverything } from "../../../packages/server/tests/upstream.ts";
import { PML_BIN } from "../_spawn.ts";
import { resultText, startAnthropicApi, toolResults } from "./_anthropic_api.ts";
import { runClaude } from "./_claude.ts";
import { startEgressTrap } from "./_egress_trap.ts";

const URI = "demo://everything/resource/dynamic/text/1";

Deno.test("claude -p: the model reads a resource of a server behind pml (ReadMcpResourceTool on server pml)", async () => {
  await using trap = startEgressTrap();
  const everything = await startEverything();
  try {
    await using ws = tempWorkspace({
      permissions: { allow: ["everything"], ask: [], deny: [] },
      private_mcps: { everything: { type: "http", proxyTo: everything.url } },
    });
    await using api = startAnthropicApi([
      { tools: [{ name: "ReadMcpResourceTool", input: { server: "pml", uri: URI } }] },
      { text: "done" },
    ]);
    const run = await runClaude({
      cwd: ws.dir,
      home: ws.home,
      api,
      trap,
      allowedTools: ["mcp__pml", "ReadMcpResourceTool", "ListMcpResourcesTool"],
      mcpServers: {
        pml: {
          type: "stdio",
          command: PML_BIN,
          args: ["stdio"],
          env: { PML_WORKSPACE: ws.dir, DENO_NO_UPDATE_CHECK: "1" },
        },
      },
    });
    assertEquals(run.code, 0, run.why);
    const turns = api.turns();
    assertEquals(turns.length, 2, run.why);
    const offered = (turns[0].tools ?? []).map((t) => t.name);
    assert(offered.includes("ReadMcpResourceTool"), offered.join(", "));
    const results = toolResults(turns[1]);
    assertEquals(results.length, 1, run.why);
    const text = resultText(results[0]);
    assertStringIncludes(text, "Resource 1: This is a plaintext resource", run.why);
    assertEquals(trap.attempts, []);
  } finally {
    await everything.close();
  }
});
