/**
 * End to end: a human's decision on an approval (docs/approvals.md), given with `pml approve`,
 * `pml deny` or on the page, through a spawned `pml serve` / `pml stdio` and a spawned `pml` CLI:
 * it is audited and its "always" applied when the human gives it, whoever continues later and
 * whether anyone does; it is the decision applied, in the agent's column too; a decision that can
 * no longer be applied is refused, saying why.
 */
import { join } from "node:path";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { enterPage, postDecision } from "../../packages/pml/src/testing/raw_http.ts";
import { waitForLine } from "../../packages/pml/src/testing/wait_for_line.ts";
import {
  type TempWorkspace,
  tempWorkspace,
  textOf,
} from "../../packages/pml/src/testing/workspace.ts";
import { spawnServe } from "./_serve.ts";
import { askWrite, continueWith, EVERYTHING_TOOL, everythingWorkspace } from "./_approvals.ts";
import { connectStdio, PML_BIN, pmlEnv, runPml } from "./_spawn.ts";

/** Writes are the agent's to answer here (the agent's column of docs/approvals.md). */
const AGENT_COLUMN = {
  approvals: "agent",
  permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
};

async function connectHttp(url: string) {
  const client = new Client({ name: "one-shot", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return Object.assign(client, { [Symbol.asyncDispose]: () => client.close() });
}

/** The `approval_decided` lines of the workspace's audit log. */
function decided(ws: { read(rel: string): string }): Record<string, unknown>[] {
  let log = "";
  try {
    log = ws.read(".pml/audit.log");
  } catch { /* none yet */ }
  return log.split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((l) =>
    l.event === "approval_decided"
  );
}

Deno.test("e2e approvals: `pml approve --always` over pml serve, in the agent's column: allow written and audited at once, the human's decision applied to the next session's pml:continue", async () => {
  await using ws = tempWorkspace(AGENT_COLUMN);
  await using serve = await spawnServe(ws);
  let id: string;
  {
    await using a = await connectHttp(serve.url);
    id = await askWrite(a, "w.txt");
  }
  const approved = await runPml(ws, ["approve", id, "--always"]);
  assertEquals(approved.code, 0, approved.text);
  assertStringIncludes(approved.stdout, `"filesystem:write_file" added to permissions.allow`);
  // Applied and audited when the human decided, before anyone continues.
  const perms = JSON.parse(ws.read(".pml.json")).permissions;
  assert(perms.allow.includes("filesystem:write_file"), JSON.stringify(perms));
  assertEquals(decided(ws).map((l) => [l.workflow_id, l.decision, l.by, l.via]), [
    [id, "always", "user", "cli"],
  ]);
  const status = await runPml(ws, ["status"]);
  assert(!status.text.includes("NOT TRUSTED"), "the file pml wrote stays trusted");

  // The next client session continues; its own "no" does not override the human's decision.
  await using b = await connectHttp(serve.url);
  const done = await continueWith(b, id, "no");
  assert(!done.isError, JSON.stringify(done));
  assertEquals(ws.read("w.txt"), "w.txt");
  assertEquals(decided(ws).length, 1, "audited once, when the human decided");
});

Deno.test("e2e approvals: a human's no (pml deny, the page) nobody continues is audited when given", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
  });
  const ids: string[] = [];
  {
    await using agent = await connectStdio(ws);
    ids.push(await askWrite(agent, "a.txt"), await askWrite(agent, "b.txt"));
  }
  const denied = await runPml(ws, ["deny", ids[0]]);
  assertEquals(denied.code, 0, denied.text);

  const open = new Deno.Command(PML_BIN, {
    args: ["approvals", "--open", "--no-browser"],
    cwd: ws.dir,
    env: pmlEnv(ws),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const { match, rest } = await waitForLine(
    open.stdout,
    /http:\/\/127\.[0-9.]+:\d+\/\?token=[0-9a-f]{48}/,
    "pml approvals --open",
  );
  const r = await postDecision(await enterPage(match[0]), ids[1], "no");
  assertEquals(r.status, 303, r.body);
  await rest;
  assertEquals((await open.status).code, 0);

  assertEquals(decided(ws).map((l) => [l.workflow_id, l.decision, l.by, l.via]), [
    [ids[0], "no", "user", "cli"],
    [ids[1], "no", "user", "page"],
  ]);
});

Deno.test("e2e approvals: `pml approve` refuses, saying why, a decision on a call that ended with its pml (a paused pml:execute)", async () => {
  await using ws = tempWorkspace(AGENT_COLUMN);
  let id: string;
  {
    await using agent = await connectStdio(ws);
    const r = await agent.callTool({
      name: "pml__execute",
      arguments: {
        code: 'return await mcp.filesystem.write_file({ path: "x.txt", content: "x" });',
      },
    });
    const body = r.structuredContent as { status: string; workflow_id: string };
    assertEquals(body.status, "approval_required", JSON.stringify(r));
    id = body.workflow_id;
  }
  const approved = await runPml(ws, ["approve", id]);
  assertEquals(approved.code, 1, approved.text);
  assertStringIncludes(approved.stderr, "has ended");
  assertStringIncludes(approved.stderr, "calls the tool again");
  assertEquals(decided(ws), [], "nothing recorded");
  const list = await runPml(ws, ["approvals"]);
  assert(!list.stdout.includes(id), "no longer listed as waiting");
  assert(!(await Deno.stat(join(ws.dir, "x.txt")).catch(() => false)), "nothing written");
  // While its pml runs, the same kind of approval is decided and applied as before.
  await using agent = await connectStdio(ws);
  const r = await agent.callTool({
    name: "pml__execute",
    arguments: { code: 'return await mcp.filesystem.write_file({ path: "y.txt", content: "y" });' },
  });
  const live = String((r.structuredContent as Record<string, unknown>).workflow_id);
  assertEquals((await runPml(ws, ["approve", live])).code, 0);
  const done = await continueWith(agent, live, "yes");
  assert(!done.isError, textOf(done));
  assertEquals(ws.read("y.txt"), "y");
});

Deno.test("e2e approvals: a one-shot pml stdio asks the first run of a server not set up yet; `pml approve` records it and the next one-shot's pml:continue runs it, once", async () => {
  await using ws = everythingWorkspace();
  const body = await askedOneShot(ws);
  assert((body.context as Record<string, unknown>).dependency, JSON.stringify(body));
  const id = String(body.workflow_id);
  const approved = await runPml(ws, ["approve", id]);
  assertEquals(approved.code, 0, approved.text);
  assertEquals(decided(ws).map((l) => [l.workflow_id, l.decision, l.by]), [[id, "yes", "user"]]);
  await (await continuedOnce(ws, id)).close();
});

/** The first call of server-everything's tool by a one-shot `pml stdio`: its approval. */
async function askedOneShot(ws: TempWorkspace): Promise<Record<string, unknown>> {
  await using first = await connectStdio(ws);
  const r = await first.callTool({ name: EVERYTHING_TOOL, arguments: {} });
  const body = r.structuredContent as Record<string, unknown>;
  assertEquals(body.status, "approval_required", JSON.stringify(r));
  return body;
}

/** A new `pml stdio` whose `pml:continue` of `id` runs the call, once (the id is spent then). */
async function continuedOnce(ws: TempWorkspace, id: string) {
  const second = await connectStdio(ws);
  try {
    const done = await continueWith(second, id, "yes");
    assert(!done.isError, textOf(done));
    assertStringIncludes(textOf(done).toLowerCase(), "logging");
    const again = await continueWith(second, id, "yes");
    assert(again.isError, textOf(again));
    return second;
  } catch (err) {
    await second.close();
    throw err;
  }
}

Deno.test("e2e approvals: a brought server's first run is stored and continuable when its tool is allowed: `pml approve` records it (audited then) and the next one-shot's pml:continue runs it, once", async () => {
  await using ws = everythingWorkspace({ allow: ["everything"], ask: [], deny: [] });
  const body = await askedOneShot(ws);
  assertEquals(body.approval_mode, "human", JSON.stringify(body));
  // The server's own first-run question, naming the call it is asked for.
  assertEquals(body.approval_type, "dependency", JSON.stringify(body));
  const context = body.context as Record<string, unknown>;
  assertEquals([context.tool, context.server], [
    "everything:toggle-simulated-logging",
    "everything",
  ]);
  const id = String(body.workflow_id);
  // Listed for the human after that pml ended, and its decision taken (not "has ended").
  const listed = await runPml(ws, ["approvals"]);
  assertStringIncludes(listed.text, id);
  const approved = await runPml(ws, ["approve", id]);
  assertEquals(approved.code, 0, approved.text);
  assertEquals(
    decided(ws).map((l) => [l.workflow_id, l.decision, l.by, l.tool]),
    [[id, "yes", "user", "everything:toggle-simulated-logging"]],
  );

  await using second = await continuedOnce(ws, id);
  // Set up now: the allowed tool runs without a question.
  const next = await second.callTool({ name: EVERYTHING_TOOL, arguments: {} });
  assert(!next.isError, textOf(next));
  assertStringIncludes(textOf(next).toLowerCase(), "logging");
  assertStringIncludes(ws.read(".pml/deps.json"), "everything", "its run is recorded");
});

Deno.test("e2e approvals: a human's no on an allowed brought server's first run, continued by a later one-shot pml, runs nothing", async () => {
  await using ws = everythingWorkspace({ allow: ["everything"], ask: [], deny: [] });
  const id = String((await askedOneShot(ws)).workflow_id);
  const denied = await runPml(ws, ["deny", id]);
  assertEquals(denied.code, 0, denied.text);
  assertEquals(decided(ws).map((l) => [l.workflow_id, l.decision, l.by]), [[id, "no", "user"]]);
  await using second = await connectStdio(ws);
  const refused = await continueWith(second, id, "yes");
  assert(refused.isError, textOf(refused));
  assertStringIncludes(textOf(refused), 'Running everything refused: "everything:');
  let deps = "";
  try {
    deps = ws.read(".pml/deps.json");
  } catch { /* nothing recorded at all */ }
  assert(!deps.includes("everything"), deps);
});
