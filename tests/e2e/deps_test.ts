/**
 * End to end: a stdio dependency (the real `@modelcontextprotocol/server-memory`, from npm's local
 * cache) installed, run and supervised by a spawned `bin/pml stdio`, and no process left behind when
 * `pml` exits, even when it is killed with SIGKILL.
 */
import { join } from "node:path";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { StdioClientTransport } from "../../packages/pml/src/sdk/stdio_client.ts";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { pidsWith, waitFor } from "../../packages/pml/src/targets/stdio/_testing.ts";
import { liveProcesses } from "../../packages/pml/src/procfs.ts";
import { PML_BIN, processAlive } from "./_spawn.ts";

const VERSION = "2026.8.31";

const text = (r: unknown) =>
  ((r as { content: { text?: string }[] }).content ?? []).map((c) => c.text ?? "").join("");

/**
 * Spawns `pml stdio`. HOME stays the real one so that npm uses its cache (and fetches from the
 * registry what a fresh machine has not cached yet); PML_HOME is private to the test.
 */
async function spawnPml(ws: { dir: string; home: string }) {
  const transport = new StdioClientTransport({
    command: PML_BIN,
    args: ["stdio"],
    cwd: ws.dir,
    env: {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: Deno.env.get("HOME") ?? ws.home,
      PML_HOME: join(ws.home, ".pml"),
      PML_WORKSPACE: ws.dir,
      PML_API_KEY: "must-not-leak",
    },
    stderr: "pipe",
  });
  const client = new Client({ name: "e2e", version: "1" }, { capabilities: {} });
  await client.connect(transport);
  return { client, pid: transport.pid! };
}

Deno.test("e2e deps: approve → install → call through bin/pml; no process left after pml exits or is killed", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: ["memory", "keeper"], ask: [], deny: [] },
  });
  // Dependency processes run a file under .pml/deps (the std sandbox also names the workspace).
  const deps = join(ws.dir, ".pml", "deps");
  const memoryBin = join(
    deps,
    `memory@${VERSION}`,
    "node_modules/@modelcontextprotocol/server-memory/dist/index.js",
  );
  // A declared raw command with a background child that outlives stdin EOF: it runs inside the OS
  // sandbox, whose pid namespace dies with pml, even when pml is killed with SIGKILL.
  ws.write(
    ".pml.json",
    JSON.stringify({
      approvals: "agent",
      permissions: { allow: ["memory", "keeper"], ask: [], deny: [] },
      private_mcps: {
        keeper: {
          type: "stdio",
          install: { command: "sh", args: ["-c", `sleep 317 & exec node ${memoryBin}`] },
          tools: [{ name: "keeper:read_graph", inputSchema: { type: "object" } }],
        },
      },
    }),
  );

  // 1. First use: listed without starting, approval_required, pml:continue → installed and called.
  const first = await spawnPml(ws);
  const { tools } = await first.client.listTools();
  assert(tools.some((t) => t.name === "memory__create_entities"));
  assertEquals(pidsWith(deps).length, 0, "listing starts nothing");
  const asked = await first.client.callTool({
    name: "memory__create_entities",
    arguments: { entities: [{ name: "e2e", entityType: "test", observations: ["through pml"] }] },
  });
  const approval = asked.structuredContent as Record<string, unknown>;
  assertEquals(approval.approval_type, "dependency");
  const done = await first.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: approval.workflow_id, decision: "yes" },
  });
  assert(!done.isError, text(done));
  const recorded = JSON.parse(ws.read(".pml/deps.json"));
  assert(recorded.installed.memory.integrity.startsWith("sha512-"));
  const [server] = pidsWith(deps);
  assert(server, "the memory server runs");
  const environ = Deno.readTextFileSync(`/proc/${server}/environ`);
  assert(!environ.includes("PML_API_KEY"), "the dependency does not get PML_API_KEY");

  // 2. Normal exit (the client closes stdin): pml and its servers are gone.
  await first.client.close();
  await waitFor(() => !processAlive(first.pid), "pml to exit");
  await waitFor(() => pidsWith(deps).length === 0, "no dependency process left after pml exits");

  // 3. Installed and allowed: no question; then SIGKILL of pml itself.
  const second = await spawnPml(ws);
  const read = await second.client.callTool({ name: "memory__read_graph", arguments: {} });
  assertStringIncludes(text(read), "through pml");
  const [orphan] = pidsWith(deps);
  assert(orphan);
  const keep = await second.client.callTool({ name: "keeper__read_graph", arguments: {} });
  const decision = (keep.structuredContent as Record<string, unknown>).workflow_id;
  const kept = await second.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: decision, decision: "yes" },
  });
  assertStringIncludes(text(kept), "through pml");
  const sleepers = () =>
    liveProcesses().filter((p) => {
      try {
        return Deno.readTextFileSync(`/proc/${p.pid}/cmdline`) === "sleep\x00317\x00";
      } catch {
        return false;
      }
    }).map((p) => p.pid);
  const [sleeper] = sleepers();
  assert(sleeper, "the raw command's background child runs");
  const keeper = pidsWith(deps).find((pid) =>
    Deno.readTextFileSync(`/proc/${pid}/cmdline`).startsWith("node")
  )!;
  assert(keeper, "the raw command's server runs");
  Deno.kill(second.pid, "SIGKILL");
  await waitFor(() => !processAlive(second.pid), "pml to die");
  await second.client.close().catch(() => {});
  await waitFor(
    () => !processAlive(orphan) && !processAlive(keeper) && !processAlive(sleeper),
    "the servers and the background child to end with pml's sandboxes",
  );

  // 4. The next pml clears what the killed one left (its pid file; the groups of an unconfined run
  // are killed there, see supervision_test.ts).
  const third = await spawnPml(ws);
  await third.client.listTools();
  assertEquals(pidsWith(deps).length, 0);
  assertEquals(sleepers(), []);
  assertEquals(
    [...Deno.readDirSync(join(ws.dir, ".pml", "deps.pids"))].filter((e) =>
      e.name === `${second.pid}.json`
    ),
    [],
    "the dead pml's pid file is removed",
  );
  await third.client.close();
  await waitFor(() => !processAlive(third.pid), "pml to exit");
});
