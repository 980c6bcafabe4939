/**
 * A `.env*` file's content is read only after the human said yes, even where read tools are
 * allowed (its values would go to the model's provider); other reads are not asked. Through an SDK
 * client in memory against the real gateway and sandbox.
 */
import { join } from "node:path";
import { pml } from "../../testing/cli.ts";
import { assert, assertEquals, assertStringIncludes } from "../../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../testing/workspace.ts";

const structured = (r: unknown) =>
  (r as { structuredContent?: Record<string, unknown> }).structuredContent ?? {};

Deno.test(".env read: the allowed read_file asks the human; the agent cannot approve it; other files are not asked", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
  ws.write(".env", "TAVILY_API_KEY=tvly-secret-value\n");
  ws.write("notes.txt", "plain notes");
  Deno.symlinkSync(".env", join(ws.dir, "innocent.txt"));
  await using g = await gatewayFor(ws, { tell: () => {} });

  const plain = await g.client.callTool({
    name: "filesystem__read_file",
    arguments: { path: "notes.txt" },
  });
  assertEquals(textOf(plain), "plain notes");

  for (const path of [".env", "innocent.txt", "./.env"]) {
    const r = await g.client.callTool({ name: "filesystem__read_file", arguments: { path } });
    const body = structured(r);
    assertEquals(body.status, "approval_required", `${path}: ${textOf(r)}`);
    assertEquals(body.approval_mode, "human");
    assertStringIncludes(String(body.description), ".env file");
    assert(!textOf(r).includes("tvly-secret-value"), path);
    const early = await g.client.callTool({
      name: "pml__continue",
      arguments: { workflow_id: body.workflow_id, decision: "yes" },
    });
    assertEquals(structured(early).status, "waiting_for_human", textOf(early));
    assert(!textOf(early).includes("tvly-secret-value"));
  }
  const pending = await pml(ws, "approvals", "--json");
  const ids = (JSON.parse(pending.stdout) as { id: string }[]).map((a) => a.id);
  assertEquals(ids.length, 3, pending.stdout);
  assertEquals((await pml(ws, "approve", ids[0])).code, 0);
  const done = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: ids[0], decision: "yes" },
  });
  assertEquals(textOf(done), "TAVILY_API_KEY=tvly-secret-value\n");
  assertEquals((await pml(ws, "deny", ids[1])).code, 0);
  const refused = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: ids[1], decision: "yes" },
  });
  assert(refused.isError);
  assertStringIncludes(textOf(refused), "was refused");
});

Deno.test(".env read: with elicitation the human answers in the client; .env.local is a .env file too", async () => {
  await using ws = tempWorkspace();
  ws.write(".env.local", "SECRET=local-value\n");
  const asked: string[] = [];
  let answer: "yes" | "no" = "no";
  await using g = await gatewayFor(ws, { elicit: (m) => (asked.push(m), answer) });
  const no = await g.client.callTool({
    name: "filesystem__read_file",
    arguments: { path: ".env.local" },
  });
  assert(no.isError);
  assert(!textOf(no).includes("local-value"));
  answer = "yes";
  const yes = await g.client.callTool({
    name: "filesystem__read_file",
    arguments: { path: ".env.local" },
  });
  assertEquals(textOf(yes), "SECRET=local-value\n");
  assertEquals(asked.length, 2);
  assertStringIncludes(asked[0], ".env.local");
});
