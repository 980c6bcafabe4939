/**
 * End to end: what an agent is told about workspace trust (docs/permissions.md, "Workspace
 * trust"), through a spawned `bin/pml stdio` and the SDK client, as a model reads it.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio, runPml } from "./_spawn.ts";

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

/** The `status` of a result's structured content (an approval's, an error's). */
function statusOf(result: unknown): unknown {
  return (result as { structuredContent?: { status?: unknown } }).structuredContent?.status;
}

/** Edits `.pml.json` by hand, as a person in an editor: nothing trusts the new content. */
function editByHand(ws: { dir: string }, content: unknown): void {
  Deno.writeTextFileSync(join(ws.dir, ".pml.json"), JSON.stringify(content, null, 2));
}

const TRUSTED = {
  approvals: "agent",
  permissions: { allow: ["filesystem", "shell:exec"], ask: [], deny: [] },
};

Deno.test("e2e trust: a hand edit that only narrows a trusted .pml.json keeps its trust (the tools stay, nothing is asked)", async () => {
  await using ws = tempWorkspace(TRUSTED);
  editByHand(ws, {
    approvals: "agent",
    permissions: { allow: ["filesystem"], ask: [], deny: ["shell:exec", "filesystem:move_file"] },
  });
  await using agent = await connectStdio(ws);
  const names = (await agent.listTools()).tools.map((t) => t.name);
  assert(names.includes("filesystem__write_file"), names.join(", "));
  assert(!names.includes("filesystem__move_file"), "the narrowing applies");
  const written = await agent.callTool({
    name: "filesystem:write_file",
    arguments: { path: "a.txt", content: "A" },
  });
  assert(!written.isError && !statusOf(written), JSON.stringify(written));
  assertEquals(ws.read("a.txt"), "A");
  const shell = await agent.callTool({ name: "shell:exec", arguments: { command: "true" } });
  assert(shell.isError, "denied by the edit");
  assert(!textOf(shell).includes("not trusted"), textOf(shell));
  const status = await runPml(ws, ["status"]);
  assert(!status.stdout.includes("NOT TRUSTED"), status.stdout);
});

Deno.test("e2e trust: a hand edit that widens a trusted .pml.json applies without its new widenings, named in every result it changes, until pml trust", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
  editByHand(ws, {
    permissions: { allow: ["filesystem", "shell:exec", "srv"], ask: [], deny: [] },
    private_mcps: { srv: { type: "stdio", install: { command: "node", args: ["srv.js"] } } },
  });
  {
    await using agent = await connectStdio(ws);
    // What was trusted still applies: writes run without a question.
    const written = await agent.callTool({
      name: "filesystem:write_file",
      arguments: { path: "a.txt", content: "A" },
    });
    assert(!written.isError && !statusOf(written), JSON.stringify(written));
    // What the edit adds waits, and the result says so, where every model reads it.
    const shell = await agent.callTool({ name: "shell:exec", arguments: { command: "true" } });
    assertEquals((shell.structuredContent as { status?: string }).status, "approval_required");
    for (const read of whatModelsRead(shell)) {
      assertStringIncludes(read, 'permissions.allow \\"shell:exec\\"');
      assertStringIncludes(read, "pml trust");
    }
    // A server the edit brings is unknown until then, and the error says why.
    const unknown = await agent.callTool({ name: "srv__echo", arguments: {} }).then(
      () => "",
      (err: Error) => err.message,
    );
    assertStringIncludes(unknown, "private_mcps.srv");
    assertStringIncludes(unknown, "pml trust");
  }
  const trusted = await runPml(ws, ["trust", "--yes"]);
  assertEquals(trusted.code, 0, trusted.text);
  assertStringIncludes(trusted.stdout, "changed since you trusted it");
  await using agent = await connectStdio(ws);
  const shell = await agent.callTool({ name: "shell:exec", arguments: { command: "true" } });
  assert(!shell.isError && !statusOf(shell), JSON.stringify(shell));
});
