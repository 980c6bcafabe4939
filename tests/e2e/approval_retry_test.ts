/**
 * End to end: an agent that calls a tool again instead of `pml:continue` (docs/approvals.md "A
 * retry"): a human's recorded decision (`pml approve`, `pml deny`) is taken by the identical call
 * (same tool, same arguments, the same question), once, from a later `pml stdio` of the workspace;
 * it never approves another call, and nothing the agent answers records it.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "../../packages/pml/src/sdk/client.ts";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { continueWith, EVERYTHING_TOOL, everythingWorkspace } from "./_approvals.ts";
import { connectStdio, runPml } from "./_spawn.ts";

/** Writes are asked of the human (the default column); reads are allowed. */
const HUMAN_WRITES = {
  permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
};

type Body = { status?: string; workflow_id?: string };

async function write(client: Client, path: string, content: string) {
  const r = await client.callTool({ name: "filesystem__write_file", arguments: { path, content } });
  return { r, body: (r.structuredContent ?? {}) as Body };
}

Deno.test("e2e approval retry: a human's yes is taken by the identical call of a later one-shot pml, once; other arguments are asked anew", async () => {
  await using ws = tempWorkspace(HUMAN_WRITES);
  let id: string;
  {
    await using first = await connectStdio(ws);
    const { body } = await write(first, "a.txt", "approved");
    assertEquals(body.status, "approval_required", JSON.stringify(body));
    id = String(body.workflow_id);
  }
  const approved = await runPml(ws, ["approve", id]);
  assertEquals(approved.code, 0, approved.text);

  await using second = await connectStdio(ws);
  // Other arguments (the content, then the path): not approved by it, asked anew.
  for (const [path, content] of [["a.txt", "not approved"], ["b.txt", "approved"]]) {
    const other = await write(second, path, content);
    assertEquals(other.body.status, "approval_required", JSON.stringify(other.r));
    assert(other.body.workflow_id !== id);
  }
  assert(!existsSync(join(ws.dir, "a.txt")) && !existsSync(join(ws.dir, "b.txt")));
  // The identical call: runs, with the human's decision.
  const same = await write(second, "a.txt", "approved");
  assert(!same.r.isError, textOf(same.r));
  assert(same.body.status !== "approval_required", JSON.stringify(same.r));
  assertEquals(ws.read("a.txt"), "approved");
  // Once: the next identical call is asked again, and the id is spent.
  Deno.removeSync(join(ws.dir, "a.txt"));
  const again = await write(second, "a.txt", "approved");
  assertEquals(again.body.status, "approval_required", JSON.stringify(again.r));
  assert(!existsSync(join(ws.dir, "a.txt")));
  const spent = await continueWith(second, id, "yes");
  assert(spent.isError, textOf(spent));
});

Deno.test("e2e approval retry: a human's no is the answer of the identical call, once", async () => {
  await using ws = tempWorkspace(HUMAN_WRITES);
  let id: string;
  {
    await using first = await connectStdio(ws);
    id = String((await write(first, "n.txt", "x")).body.workflow_id);
  }
  const denied = await runPml(ws, ["deny", id]);
  assertEquals(denied.code, 0, denied.text);
  await using second = await connectStdio(ws);
  const refused = await write(second, "n.txt", "x");
  assert(refused.r.isError, JSON.stringify(refused.r));
  assert(textOf(refused.r).includes("the user refused"), textOf(refused.r));
  const asked = await write(second, "n.txt", "x");
  assertEquals(asked.body.status, "approval_required", JSON.stringify(asked.r));
  assert(!existsSync(join(ws.dir, "n.txt")));
});

Deno.test("e2e approval retry: the agent's own answer records nothing a retry could take", async () => {
  await using ws = tempWorkspace(HUMAN_WRITES);
  await using agent = await connectStdio(ws);
  const { body } = await write(agent, "f.txt", "forged");
  const id = String(body.workflow_id);
  // The agent answers its human-column approval itself: it waits, and nothing is recorded.
  const own = await continueWith(agent, id, "yes");
  assertEquals((own.structuredContent as Body).status, "waiting_for_human");
  const retry = await write(agent, "f.txt", "forged");
  assertEquals(retry.body.status, "approval_required", JSON.stringify(retry.r));
  // Another one-shot process retrying it does not run it either.
  {
    await using other = await connectStdio(ws);
    const r = await write(other, "f.txt", "forged");
    assertEquals(r.body.status, "approval_required", JSON.stringify(r.r));
  }
  assert(!existsSync(join(ws.dir, "f.txt")));
  // The first approval is still the human's to decide, and its pml:continue then runs it.
  const approved = await runPml(ws, ["approve", id]);
  assertEquals(approved.code, 0, approved.text);
  const done = await continueWith(agent, id, "no");
  assert(!done.isError, textOf(done));
  assertEquals(ws.read("f.txt"), "forged");
});

Deno.test("e2e approval retry: two one-shot pml racing with the identical call take the human's yes once between them", async () => {
  await using ws = tempWorkspace(HUMAN_WRITES);
  let id: string;
  {
    await using first = await connectStdio(ws);
    id = String((await write(first, "r.txt", "once")).body.workflow_id);
  }
  assertEquals((await runPml(ws, ["approve", id])).code, 0);
  await using a = await connectStdio(ws);
  await using b = await connectStdio(ws);
  const results = await Promise.all([write(a, "r.txt", "once"), write(b, "r.txt", "once")]);
  const ran = results.filter((x) => x.body.status !== "approval_required");
  assertEquals(ran.length, 1, JSON.stringify(results.map((x) => x.r)));
  assert(!ran[0].r.isError, textOf(ran[0].r));
  assertEquals(ws.read("r.txt"), "once");
});

Deno.test("e2e approval retry: an allowed brought server's first run, approved with `pml approve`, is taken by the same call of a later one-shot pml", async () => {
  await using ws = everythingWorkspace({ allow: ["everything"], ask: [], deny: [] });
  let id: string;
  {
    await using first = await connectStdio(ws);
    const r = await first.callTool({ name: EVERYTHING_TOOL, arguments: {} });
    const body = r.structuredContent as Body;
    assertEquals(body.status, "approval_required", JSON.stringify(r));
    id = String(body.workflow_id);
  }
  assertEquals((await runPml(ws, ["approve", id])).code, 0);
  await using second = await connectStdio(ws);
  const ran = await second.callTool({ name: EVERYTHING_TOOL, arguments: {} });
  assert(!ran.isError, textOf(ran));
  assert(textOf(ran).toLowerCase().includes("logging"), textOf(ran));
  const spent = await continueWith(second, id, "yes");
  assert(spent.isError, textOf(spent));
});
