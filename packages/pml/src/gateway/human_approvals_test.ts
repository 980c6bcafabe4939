/**
 * Human mode (docs/approvals.md): an agent's `pml:continue` does not approve shell, writes or
 * installs; the human decides with `pml approve` / `pml deny` (or the page, see
 * approval_page_test.ts); pending approvals survive a restart. Through an SDK client in memory.
 */
import { join } from "node:path";
import { pml } from "../testing/cli.ts";
import { enterPage, postDecision } from "../testing/raw_http.ts";
import { assert, assertEquals, assertMatch, assertStringIncludes } from "../testing/assert.ts";
import { gatewayFor, humanLines, tempWorkspace, textOf } from "../testing/workspace.ts";

const PERMS = {
  permissions: {
    allow: ["filesystem:read_file"],
    ask: ["filesystem:write_file", "filesystem:get_file_info"],
    deny: [],
  },
};

function structured(r: unknown): Record<string, unknown> {
  return (r as { structuredContent: Record<string, unknown> }).structuredContent;
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

Deno.test("human mode by default for writes: the agent's pml:continue waits; pml approve lets it run", async () => {
  await using ws = tempWorkspace(PERMS);
  const human = humanLines();
  await using g = await gatewayFor(ws, { tell: human.tell });
  const r = await g.client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "out.txt", content: "hi" },
  });
  const body = structured(r);
  assertEquals(body.status, "approval_required");
  assertEquals(body.approval_mode, "human");
  const id = String(body.workflow_id);
  // The link goes to the human (stderr), the agent gets the id and how a human answers.
  assertMatch(human.lastLink(), /^http:\/\/127\.\d+\.\d+\.\d+:\d+\/\?token=[0-9a-f]{48}$/);
  assertEquals(body.approval_url, undefined);
  assert(!/token|http:/.test(JSON.stringify(r)), JSON.stringify(r));
  assertStringIncludes(String(body.message), `pml approve ${id}`);
  assertStringIncludes(String(body.message), "pml approvals --open");

  // The agent tries to approve its own write, twice, with each answer.
  for (const decision of ["yes", "always"]) {
    const early = await g.client.callTool({
      name: "pml__continue",
      arguments: { workflow_id: id, decision },
    });
    assertEquals(structured(early).status, "waiting_for_human", textOf(early));
    // The text alone (what opencode and Gemini CLI show) names the approval and how to answer.
    assertStringIncludes(textOf(early), id);
    assertStringIncludes(textOf(early), `pml approve ${id}`);
    assert(!/token|http:/.test(JSON.stringify(early)), JSON.stringify(early));
  }
  assertStringIncludes(human.lines.at(-1)!, `approval ${id} still waits for you: http://127.`);
  assert(!(await exists(join(ws.dir, "out.txt"))), "nothing written before the human decided");
  assert(!ws.read(".pml.json").includes('"filesystem:write_file"],'), "nothing persisted");

  const listed = await pml(ws, "approvals");
  assertEquals(listed.code, 0, listed.stderr);
  assertStringIncludes(listed.stdout, id);
  assertStringIncludes(listed.stdout, "filesystem:write_file");
  assertStringIncludes(listed.stdout, "out.txt");

  const approved = await pml(ws, "approve", id);
  assertEquals(approved.code, 0, approved.stderr);
  const done = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: id, decision: "no" }, // the human's answer wins
  });
  assert(!done.isError, textOf(done));
  assertEquals(ws.read("out.txt"), "hi");
  assertEquals((await pml(ws, "approvals")).stdout, `No pending approval in ${ws.dir}\n`);
  // The human's yes is in the audit log, as theirs.
  const audit = ws.read(".pml/audit.log").trim().split("\n").map((l) => JSON.parse(l));
  const decided = audit.filter((l) => l.event === "approval_decided");
  assertEquals(decided.map((l) => [l.workflow_id, l.decision, l.by, l.via, l.tool]), [
    [id, "yes", "user", "cli", "filesystem:write_file"],
  ]);
});

Deno.test("pml deny refuses the call; pml approve --always persists the tool; a wrong id is a clear error", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws, { tell: () => {} });
  const ask = async (path: string) =>
    String(
      structured(
        await g.client.callTool({
          name: "filesystem__write_file",
          arguments: { path, content: "x" },
        }),
      ).workflow_id,
    );
  const a = await ask("a.txt");
  const b = await ask("b.txt");

  const bad = await pml(ws, "approve", "00000000-0000-4000-8000-000000000000");
  assertEquals(bad.code, 1);
  assertStringIncludes(bad.stderr, "No pending approval");
  assertEquals((await pml(ws, "approve")).code, 2, "no id: usage error");

  assertEquals((await pml(ws, "deny", a)).code, 0);
  const again = await pml(ws, "approve", a);
  assertEquals(again.code, 1, "the first decision stands");
  assertStringIncludes(again.stderr, 'decided already ("no")');
  const refused = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: a, decision: "yes" },
  });
  assert(refused.isError);
  assertStringIncludes(textOf(refused), "the user refused");
  assert(!(await exists(join(ws.dir, "a.txt"))));

  assertEquals((await pml(ws, "approve", "--always", b)).code, 0);
  const ok = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: b, decision: "yes" },
  });
  assert(!ok.isError, textOf(ok));
  assertEquals(ws.read("b.txt"), "x");
  const perms = JSON.parse(ws.read(".pml.json")).permissions;
  assert(perms.allow.includes("filesystem:write_file"), JSON.stringify(perms));
});

Deno.test("pml approve --all decides every pending approval; agent mode stays for other tools", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws, { tell: () => {} });
  const ids: string[] = [];
  for (const path of ["1.txt", "2.txt"]) {
    const r = await g.client.callTool({
      name: "filesystem__write_file",
      arguments: { path, content: path },
    });
    ids.push(String(structured(r).workflow_id));
  }
  // get_file_info is asked, but is no write: the agent still answers it.
  const info = await g.client.callTool({
    name: "filesystem__get_file_info",
    arguments: { path: "." },
  });
  assertEquals(structured(info).approval_mode, undefined);
  const infoDone = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: structured(info).workflow_id, decision: "yes" },
  });
  assert(!infoDone.isError, textOf(infoDone));

  assertEquals((await pml(ws, "approve", "--all")).code, 0);
  for (const id of ids) {
    const r = await g.client.callTool({
      name: "pml__continue",
      arguments: { workflow_id: id, decision: "yes" },
    });
    assert(!r.isError, textOf(r));
  }
  assertEquals(ws.read("1.txt") + ws.read("2.txt"), "1.txt2.txt");
});

Deno.test('"approvals": "agent" in .pml.json: pml:continue decides, as before', async () => {
  await using ws = tempWorkspace({ ...PERMS, approvals: "agent" });
  await using g = await gatewayFor(ws, { tell: () => {} });
  const r = await g.client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "out.txt", content: "hi" },
  });
  assertEquals(structured(r).approval_mode, undefined);
  assertEquals(structured(r).approval_url, undefined);
  const done = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: structured(r).workflow_id, decision: "yes" },
  });
  assert(!done.isError, textOf(done));
  assertEquals(ws.read("out.txt"), "hi");
});

Deno.test("a pending approval survives a restart: a new gateway runs the call once the human approved", async () => {
  await using ws = tempWorkspace(PERMS);
  let id: string;
  {
    await using g = await gatewayFor(ws, { tell: () => {} });
    const r = await g.client.callTool({
      name: "filesystem__write_file",
      arguments: { path: "later.txt", content: "kept" },
    });
    id = String(structured(r).workflow_id);
  }
  await using g2 = await gatewayFor(ws, { tell: () => {} });
  const early = await g2.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: id, decision: "yes" },
  });
  assertEquals(structured(early).status, "waiting_for_human", textOf(early));
  assertEquals((await pml(ws, "approve", id)).code, 0);
  const done = await g2.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: id, decision: "yes" },
  });
  assert(!done.isError, textOf(done));
  assertEquals(ws.read("later.txt"), "kept");
  const replay = await g2.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: id, decision: "yes" },
  });
  assert(replay.isError, "answered once");
});

Deno.test("a tool cannot write the approval store: forging a human decision is refused", async () => {
  await using ws = tempWorkspace({
    approvals: "human",
    permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
  });
  await using g = await gatewayFor(ws, { tell: () => {} });
  const r = await g.client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "x.txt", content: "x" },
  });
  const id = String(structured(r).workflow_id);
  // Even with write_file allowed (approve --always of another call), the store stays out of reach.
  const other = await g.client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "y.txt", content: "y" },
  });
  await pml(ws, "approve", "--always", String(structured(other).workflow_id));
  await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: structured(other).workflow_id, decision: "yes" },
  });
  const forged = await g.client.callTool({
    name: "filesystem__write_file",
    arguments: {
      path: `.pml/approvals/${id}.decision.json`,
      content: JSON.stringify({ decision: "yes", via: "page", at: 0 }),
    },
  });
  assert(forged.isError, textOf(forged));
  assertStringIncludes(textOf(forged), ".pml");
  const still = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: id, decision: "yes" },
  });
  assertEquals(structured(still).status, "waiting_for_human");
  assert(!(await exists(join(ws.dir, "x.txt"))));
});

/** The bytes under `.pml/approvals/`. */
function storedBytes(dir: string): number {
  let total = 0;
  for (const e of Deno.readDirSync(join(dir, ".pml/approvals"))) {
    total += Deno.statSync(join(dir, ".pml/approvals", e.name)).size;
  }
  return total;
}

Deno.test("what an approval stores is bounded: a 10 KB call nesting an array 5,000 deep stores ~20 KB (not 100 MB); past 2 MB the call is refused with what to do, nothing stored or run", async () => {
  await using ws = tempWorkspace(PERMS);
  const human = humanLines();
  await using g = await gatewayFor(ws, { tell: human.tell });
  let deep: unknown = [];
  for (let i = 0; i < 5000; i++) deep = [deep];
  const args = { path: "deep.txt", content: "x", nested: deep };
  assert(JSON.stringify(args).length < 11_000);
  const r = await g.client.callTool({ name: "filesystem__write_file", arguments: args });
  assertEquals(structured(r).status, "approval_required", textOf(r));
  const bytes = storedBytes(ws.dir);
  assert(bytes < 40_000, `${bytes} bytes stored`);
  // The page and the CLI show it without blowing up either.
  const listed = await pml(ws, "approvals", "--json");
  assert(listed.stdout.length < 200_000, `${listed.stdout.length} characters listed`);
  const page = await enterPage(human.lastLink());
  assertEquals(page.status, 200);
  assert(page.page.length < 400_000, `${page.page.length} characters of page`);

  const big = await g.client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "big.txt", content: "y".repeat(3 * 1024 * 1024) },
  });
  assert(big.isError, textOf(big));
  assertStringIncludes(textOf(big), 'Cannot ask for approval of "filesystem:write_file"');
  assertStringIncludes(textOf(big), "more than an approval may hold (2.0 MB)");
  assertEquals(storedBytes(ws.dir), bytes, "nothing more stored");
  assert(!(await exists(join(ws.dir, "big.txt"))));
});

Deno.test("the page of a running pml: an Always is applied when the human clicks (the file and this gateway's permissions), audited once, before and whether or not the agent continues", async () => {
  await using ws = tempWorkspace(PERMS);
  const human = humanLines();
  await using g = await gatewayFor(ws, { tell: human.tell });
  const r = await g.client.callTool({
    name: "filesystem__write_file",
    arguments: { path: "out.txt", content: "hi" },
  });
  const id = String(structured(r).workflow_id);
  const decided = await postDecision(await enterPage(human.lastLink()), id, "always");
  assertEquals(decided.status, 303, decided.body);
  assert(JSON.parse(ws.read(".pml.json")).permissions.allow.includes("filesystem:write_file"));
  assertEquals(g.gateway.permissions.check("filesystem:write_file"), "allow", "this gateway knows");
  const lines = () => ws.read(".pml/audit.log").split("\n").filter((l) => l.includes("decided"));
  assertEquals(lines().length, 1);
  assertStringIncludes(lines()[0], `"decision":"always","by":"user","via":"page"`);
  const done = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: id, decision: "no" },
  });
  assert(!done.isError, textOf(done));
  assertEquals(ws.read("out.txt"), "hi");
  assertEquals(lines().length, 1, "not audited again when taken up");
});
