/**
 * End to end: what an agent is told about workspace trust (docs/permissions.md, "Workspace
 * trust"), through a spawned `bin/pml stdio` and the SDK client, as a model reads it.
 */
import { join } from "node:path";
import { assert, assertStringIncludes } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "./_spawn.ts";

/**
 * Claude Code and Codex hand the model `structuredContent` alone when a result has one; the others
 * show the text blocks, often the first alone. The notice must be in both.
 */
function whatModelsRead(result: unknown): string[] {
  const r = result as { content?: unknown; structuredContent?: unknown };
  const first = (r.content as { type: string; text?: string }[] | undefined)?.[0];
  return [
    r.structuredContent ? JSON.stringify(r.structuredContent) : first?.text ?? "",
    first?.text ?? "",
  ];
}

Deno.test("e2e trust: an untrusted .pml.json's notice reaches a model that reads structuredContent only, and one that reads the first text block", async () => {
  await using ws = tempWorkspace();
  Deno.writeTextFileSync(
    join(ws.dir, ".pml.json"),
    JSON.stringify({
      approvals: "agent",
      permissions: { allow: ["filesystem"], ask: [], deny: ["shell"] },
    }),
  );
  await using agent = await connectStdio(ws);
  const asked = await agent.callTool({
    name: "filesystem:write_file",
    arguments: { path: "a.txt", content: "A" },
  });
  assert(
    (asked.structuredContent as { status?: string }).status === "approval_required",
    JSON.stringify(asked),
  );
  const denied = await agent.callTool({
    name: "shell:exec",
    arguments: { command: "true" },
  });
  assert(denied.isError, JSON.stringify(denied));
  for (const r of [asked, denied]) {
    for (const read of whatModelsRead(r)) {
      assertStringIncludes(read, "not trusted", JSON.stringify(r));
      assertStringIncludes(read, "pml trust", JSON.stringify(r));
    }
  }
  // The approval's text block is still its JSON, the notice one of its fields.
  const first = (asked.content as { text: string }[])[0].text;
  assertStringIncludes(JSON.parse(first).notice, "pml trust");
});
