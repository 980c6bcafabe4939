import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertNotEquals,
  assertStringIncludes,
} from "../../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../testing/workspace.ts";
import { NpmInstaller } from "../../deps/installer.ts";
import { FakeClock, pidsWith, waitFor } from "./_testing.ts";
import { PidFile, processStart } from "./pid_file.ts";

const installer = new NpmInstaller({ env: Deno.env.toObject() });
const ALLOW = { permissions: { allow: ["memory", "everything", "flaky"], ask: [], deny: [] } };

Deno.test("100 concurrent calls share one process and each gets its own answer", async () => {
  await using ws = tempWorkspace(ALLOW);
  await using g = await gatewayFor(ws, { stdio: { installer }, elicit: () => "yes" });
  const names = Array.from({ length: 100 }, (_, i) => `entity-${i}`);
  const created = await g.client.callTool({
    name: "memory:create_entities",
    arguments: {
      entities: names.map((name) => ({
        name,
        entityType: "test",
        observations: [`obs of ${name}`],
      })),
    },
  });
  assert(!created.isError, textOf(created));
  const results = await Promise.all(
    names.map((name) =>
      g.client.callTool({ name: "memory:open_nodes", arguments: { names: [name] } })
    ),
  );
  results.forEach((r, i) => {
    const graph = r.structuredContent as { entities: { name: string; observations: string[] }[] };
    assertEquals(graph.entities.map((e) => e.name), [names[i]]);
    assertEquals(graph.entities[0].observations, [`obs of ${names[i]}`]);
  });
  assertEquals(pidsWith(ws.dir).length, 1);
});

Deno.test("a child killed mid-call fails that call clearly; the next call restarts it", async () => {
  await using ws = tempWorkspace(ALLOW);
  await using g = await gatewayFor(ws, { stdio: { installer }, elicit: () => "yes" });
  const echo = await g.client.callTool({ name: "everything:echo", arguments: { message: "one" } });
  assertStringIncludes(textOf(echo), "one");
  const [pid] = pidsWith(ws.dir);
  const long = g.client.callTool({
    name: "everything:trigger-long-running-operation",
    arguments: { duration: 30, steps: 30 },
  });
  await new Promise((r) => setTimeout(r, 300));
  Deno.kill(pid, "SIGKILL");
  const failed = await long;
  assert(failed.isError);
  assertStringIncludes(
    textOf(failed),
    "the everything server was killed by SIGKILL during the call",
  );
  await waitFor(() => pidsWith(ws.dir).length === 0, "the killed process to be reaped");
  const again = await g.client.callTool({ name: "everything:echo", arguments: { message: "two" } });
  assert(!again.isError, textOf(again));
  assertStringIncludes(textOf(again), "two");
  const [restarted] = pidsWith(ws.dir);
  assertNotEquals(restarted, pid);
});

Deno.test("per-call timeout: a clear error, and the server keeps serving", async () => {
  await using ws = tempWorkspace(ALLOW);
  await using g = await gatewayFor(ws, {
    stdio: { installer, callTimeoutMs: 500 },
    elicit: () => "yes",
  });
  const slow = await g.client.callTool({
    name: "everything:trigger-long-running-operation",
    arguments: { duration: 5, steps: 5 },
  });
  assert(slow.isError);
  assertStringIncludes(
    textOf(slow),
    '"everything:trigger-long-running-operation" timed out after 500 ms: the everything server did not answer',
  );
  const echo = await g.client.callTool({
    name: "everything:echo",
    arguments: { message: "still here" },
  });
  assertStringIncludes(textOf(echo), "still here");
});

Deno.test("idle: stopped after 5 idle minutes (injected clock), restarted transparently", async () => {
  await using ws = tempWorkspace(ALLOW);
  const clock = new FakeClock();
  await using g = await gatewayFor(ws, { stdio: { installer, clock }, elicit: () => "yes" });
  const created = await g.client.callTool({
    name: "memory:create_entities",
    arguments: { entities: [{ name: "kept", entityType: "t", observations: [] }] },
  });
  assert(!created.isError, textOf(created));
  const [first] = pidsWith(ws.dir);
  clock.advance(4 * 60 * 1000);
  assertEquals(pidsWith(ws.dir), [first], "still running before 5 minutes");
  // A call at 4 minutes: the 5 idle minutes count from it.
  assert(!(await g.client.callTool({ name: "memory:read_graph", arguments: {} })).isError);
  clock.advance(60 * 1000);
  clock.advance(3 * 60 * 1000);
  assertEquals(pidsWith(ws.dir), [first], "still running 4 minutes after the last call");
  clock.advance(60 * 1000);
  await waitFor(() => pidsWith(ws.dir).length === 0, "the idle server to stop");
  const read = await g.client.callTool({ name: "memory:read_graph", arguments: {} });
  assertStringIncludes(textOf(read), '"name": "kept"');
  const [second] = pidsWith(ws.dir);
  assert(second !== undefined && second !== first);
});

Deno.test("raw command: approved once; repeated crashes give up with a clear error", async () => {
  await using ws = tempWorkspace({
    ...ALLOW,
    private_mcps: {
      flaky: {
        type: "stdio",
        install: { command: "sh", args: ["-c", "echo boom >&2; exit 3"], envRequired: [] },
        tools: [{ name: "flaky:go", description: "crashes", inputSchema: { type: "object" } }],
      },
    },
  });
  const asked: string[] = [];
  await using g = await gatewayFor(ws, {
    stdio: { installer, supervision: { backoffMs: 10, maxCrashes: 3 } },
    elicit: (m) => (asked.push(m), "yes"),
  });
  const texts: string[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await g.client.callTool({ name: "flaky:go", arguments: {} });
    assert(r.isError);
    texts.push(textOf(r));
  }
  assertEquals(asked.length, 1, "a raw command is approved once");
  assertStringIncludes(
    asked[0],
    'Run flaky with "sh -c echo boom >&2; exit 3"? (a raw command, nothing pinned: runs in the OS ' +
      "sandbox, reads the workspace, writes only its own private home, no network)",
  );
  assertStringIncludes(texts[0], "Cannot start flaky");
  assertStringIncludes(texts[0], "boom");
  assertStringIncludes(texts[3], "The flaky server crashed 3 times in a row");
  assertStringIncludes(texts[3], "will not restart it for");
  assertEquals(JSON.parse(ws.read(".pml/deps.json")).installed.flaky.mode, "command");
});

Deno.test("pid file: groups left by a dead pml are killed at the next start; a live pml's are kept", async () => {
  await using ws = tempWorkspace({});
  const spawnGroup = () =>
    new Deno.Command("sleep", { args: ["60"], detached: true, stdout: "null" }).spawn();
  const dead = new Deno.Command("true").spawn();
  await dead.status;
  const orphan = spawnGroup();
  const liveOwner = spawnGroup();
  const kept = spawnGroup();
  try {
    const dir = join(ws.dir, ".pml", "deps.pids");
    Deno.mkdirSync(dir, { recursive: true });
    const file = (owner: number, child: number) =>
      JSON.stringify({
        owner: { pid: owner, start: "1" },
        children: [{ pid: child, start: processStart(child), server: "x" }],
      });
    Deno.writeTextFileSync(join(dir, `${dead.pid}.json`), file(dead.pid, orphan.pid));
    Deno.writeTextFileSync(
      join(dir, `${liveOwner.pid}.json`),
      JSON.stringify({
        owner: { pid: liveOwner.pid, start: processStart(liveOwner.pid) },
        children: [{ pid: kept.pid, start: processStart(kept.pid) }],
      }),
    );
    const killed = await new PidFile(ws.dir).reapOrphans();
    assertEquals(killed, [orphan.pid]);
    assertEquals((await orphan.status).signal, "SIGKILL");
    assert(processStart(kept.pid) !== undefined, "the live pml's server is untouched");
    assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), [`${liveOwner.pid}.json`]);
  } finally {
    for (const c of [orphan, liveOwner, kept]) {
      try {
        c.kill("SIGKILL");
      } catch { /* gone */ }
      await c.status;
    }
  }
});

Deno.test("a child killed between calls: the call racing the kill fails clearly or succeeds; the one after always works", async () => {
  await using ws = tempWorkspace(ALLOW);
  await using g = await gatewayFor(ws, { stdio: { installer }, elicit: () => "yes" });
  const first = await g.client.callTool({ name: "everything:echo", arguments: { message: "0" } });
  assert(!first.isError, textOf(first));
  for (let round = 1; round <= 10; round++) {
    const pids = pidsWith(ws.dir);
    assertEquals(pids.length, 1);
    Deno.kill(pids[0], "SIGKILL"); // and call again at once, before the exit is reaped
    const racing = await g.client.callTool({
      name: "everything:echo",
      arguments: { message: `racing ${round}` },
    });
    if (racing.isError) {
      assertStringIncludes(textOf(racing), "the everything server");
      assertStringIncludes(textOf(racing), "restarted");
    } else {
      assertStringIncludes(textOf(racing), `racing ${round}`);
    }
    assert(!/^broken pipe/i.test(textOf(racing)), textOf(racing));
    const next = await g.client.callTool({
      name: "everything:echo",
      arguments: { message: `round ${round}` },
    });
    assert(!next.isError, `round ${round}: ${textOf(next)}`);
    assertStringIncludes(textOf(next), `round ${round}`);
  }
});
