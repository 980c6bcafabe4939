/**
 * Attack (issue 27 item 1): an MCP, or any process with loopback reach, that sees what the agent
 * sees (every result, error, `_meta`, `tools/list`, the server's instructions, and whatever the
 * allowed read tools return) tries to decide the human's approvals: the old way (read an
 * `approval_url` from a result, open it, read the form token, post a decision), and by finding the
 * page among `pml`'s listening sockets and guessing its way in. Beside it, the ordinary work: the
 * link `pml` writes on its stderr (the human's channel) opens the page, and the human's decision
 * there lets the agent's `pml:continue` run the call.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { childPids } from "../../packages/pml/src/procfs.ts";
import { enterPage, postDecision, rawHttp } from "../../packages/pml/src/testing/raw_http.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "../e2e/_spawn.ts";

const TOKEN = /[0-9a-f]{32,}/g;
const URL_RE = /https?:\/\/[^\s"'\\<>]+/g;

/** Listening TCP sockets of the processes `pids`, from `/proc/net/tcp` and their fds. */
function listeningSockets(pids: number[]): string[] {
  const inodes = new Set<string>();
  for (const pid of pids) {
    try {
      for (const fd of Deno.readDirSync(`/proc/${pid}/fd`)) {
        const link = Deno.readLinkSync(`/proc/${pid}/fd/${fd.name}`);
        const m = /^socket:\[(\d+)\]$/.exec(link);
        if (m) inodes.add(m[1]);
      }
    } catch { /* gone */ }
  }
  const out: string[] = [];
  for (const line of Deno.readTextFileSync("/proc/net/tcp").split("\n").slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 10 || cols[3] !== "0A" || !inodes.has(cols[9])) continue;
    const [hexIp, hexPort] = cols[1].split(":");
    const ip = [3, 2, 1, 0].map((i) => parseInt(hexIp.slice(i * 2, i * 2 + 2), 16)).join(".");
    out.push(`${ip}:${parseInt(hexPort, 16)}`);
  }
  return out;
}

Deno.test("attack approval_channel: what the agent sees carries no approval token or link, and loopback reach alone decides nothing", async () => {
  await using ws = tempWorkspace({
    approvals: "human",
    permissions: {
      allow: [
        "filesystem:read_file",
        "filesystem:list_directory",
        "filesystem:search_files",
        "pml",
      ],
      ask: [
        "filesystem:write_file",
        "filesystem:edit_file",
        "filesystem:create_directory",
        "shell",
      ],
      deny: [],
    },
  });
  ws.write("a.txt", "old line\n");
  await using agent = await connectStdio(ws);
  const seen: string[] = []; // everything the agent receives
  const see = (x: unknown) => seen.push(JSON.stringify(x));
  see(agent.getServerVersion());
  see(agent.getInstructions());
  see(await agent.listTools());

  // Seven approvals, as in the report, plus a paused pml:execute.
  const calls: [string, Record<string, unknown>][] = [
    ["filesystem__write_file", { path: "w1.txt", content: "1" }],
    ["filesystem__write_file", { path: "w2.txt", content: "2" }],
    ["filesystem__write_file", { path: "w3.txt", content: "3" }],
    ["filesystem__edit_file", { path: "a.txt", edits: [{ oldText: "old", newText: "new" }] }],
    ["filesystem__create_directory", { path: "made" }],
    ["shell__exec", { command: "touch shell1.txt" }],
    ["shell__exec", { command: "touch shell2.txt" }],
    ["pml__execute", { code: `await mcp.filesystem.write_file({ path: "x.txt", content: "x" });` }],
  ];
  const ids: string[] = [];
  for (const [name, args] of calls) {
    const r = await agent.callTool({ name, arguments: args });
    see(r);
    const body = r.structuredContent as Record<string, unknown>;
    assertEquals(body?.status, "approval_required", JSON.stringify(r));
    assertEquals(body.approval_mode, "human");
    ids.push(String(body.workflow_id));
  }
  // The agent's other ways to look: continue (each decision), errors, its allowed reads.
  for (const id of ids) {
    for (const decision of ["yes", "always", "no"]) {
      const r = await agent.callTool({
        name: "pml__continue",
        arguments: { workflow_id: id, decision },
      });
      see(r);
      assertEquals((r.structuredContent as Record<string, unknown>)?.status, "waiting_for_human");
    }
  }
  see(
    await agent.callTool({
      name: "pml__continue",
      arguments: { workflow_id: "nope", decision: "yes" },
    }),
  );
  see(await agent.callTool({ name: "pml__continue", arguments: {} }));
  see(await agent.callTool({ name: "nosuch__tool", arguments: {} }).catch((e) => String(e)));
  see(
    await agent.callTool({
      name: "filesystem__list_directory",
      arguments: { path: ".pml/approvals" },
    }),
  );
  for (const id of ids) {
    see(
      await agent.callTool({
        name: "filesystem__read_file",
        arguments: { path: `.pml/approvals/${id}.json` },
      }),
    );
  }
  see(
    await agent.callTool({
      name: "filesystem__search_files",
      arguments: { path: ".pml", pattern: "token" },
    }),
  );
  see(
    await agent.callTool({ name: "filesystem__read_file", arguments: { path: ".pml/audit.log" } })
      .catch(String),
  );

  let attempts = 0;
  const visible = seen.join("\n");
  // 1. The old attack: a link in a result.
  const urls = visible.match(URL_RE) ?? [];
  for (const url of urls) {
    attempts++;
    const u = new URL(url.replace(/[),.]+$/, ""));
    if (!u.hostname.startsWith("127.")) continue;
    const s = await enterPage(u.href).catch(() => undefined);
    assert(!s?.csrf, `a link the agent saw opened the approval page: ${u.href}`);
  }
  assert(!/token=/i.test(visible), "no token parameter anywhere the agent looks");

  // 2. Loopback reach: find pml's listening sockets (as a process with the host's network
  // namespace can, through /proc/net/tcp) and try every token-like string the agent saw.
  const sockets = listeningSockets([agent.pid, ...childPids(agent.pid)]);
  assert(sockets.length > 0, "pml's page is listening (found through /proc/net/tcp)");
  const guesses = [...new Set([...(visible.match(TOKEN) ?? []), ...ids, "ab".repeat(24)])];
  for (const at of sockets) {
    for (const guess of guesses) {
      attempts++;
      const r = await rawHttp(at, { path: `/?token=${guess}`, headers: { host: at } });
      assert(!/set-cookie/i.test(r.headers), `a guessed token opened the page at ${at}`);
    }
    for (const id of ids) {
      for (const csrf of [...guesses.slice(0, 3), ""]) {
        attempts++;
        const r = await rawHttp(at, {
          method: "POST",
          path: "/decide",
          headers: {
            host: at,
            origin: `http://${at}`,
            cookie: `pml_approvals=${csrf}`,
            "content-type": "application/x-www-form-urlencoded",
          },
          body: new URLSearchParams({ id, decision: "yes", csrf }).toString(),
        });
        assert(r.status === 403 || r.status === 421 || r.status === 404, `${at}: ${r.status}`);
      }
    }
    attempts++;
    assert([403, 421].includes((await rawHttp(at, { path: "/", headers: { host: at } })).status));
  }

  // Nothing was decided: no decision file, nothing written or run.
  const decisions = [...Deno.readDirSync(join(ws.dir, ".pml/approvals"))]
    .filter((e) => e.name.endsWith(".decision.json"));
  assertEquals(decisions, []);
  for (const f of ["w1.txt", "w2.txt", "w3.txt", "made", "shell1.txt", "shell2.txt", "x.txt"]) {
    assert(!(await Deno.stat(join(ws.dir, f)).catch(() => false)), `${f} exists`);
  }
  assertEquals(ws.read("a.txt"), "old line\n");
  console.error(`approval_channel: ${attempts} attempts, 0 decided`);

  // The ordinary work beside the wall: the human's channel (pml's stderr) has a link that works.
  const links = agent.stderr().match(/http:\/\/127\.[0-9.]+:\d+\/\?token=[0-9a-f]{48}/g) ?? [];
  assert(links.length >= ids.length, agent.stderr());
  const session = await enterPage(links[links.length - 1]);
  assertEquals(session.status, 200, session.page);
  for (const id of ids) assertStringIncludes(session.page, id);
  const decided = await postDecision(session, ids[0], "yes");
  assertEquals(decided.status, 303, decided.body);
  const done = await agent.callTool({
    name: "pml__continue",
    arguments: { workflow_id: ids[0], decision: "yes" },
  });
  assert(!done.isError, JSON.stringify(done));
  assertEquals(ws.read("w1.txt"), "1");
});
