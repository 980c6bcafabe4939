/**
 * `pml stdio` starts no process during the handshake, and no read sandbox until a local tool is
 * called: a gateway used only as a cloud bridge never holds one (~40 MB). The first read starts it,
 * the next reads reuse it.
 */
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { childPids, connectStdio } from "./_spawn.ts";

/** Descendants of `pid` that run the std sandbox entry (under bubblewrap or not). */
function stdSandboxes(pid: number): number[] {
  const tree = (p: number): number[] => childPids(p).flatMap((c) => [c, ...tree(c)]);
  return tree(pid).filter((p) => {
    try {
      return Deno.readTextFileSync(`/proc/${p}/cmdline`).includes("std_entry");
    } catch {
      return false; // gone meanwhile (the bubblewrap probe)
    }
  });
}

Deno.test("pml stdio: no process before the first tools/list, no read sandbox until a local call", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
  ws.write("a.txt", "hello");
  await using client = await connectStdio(ws);
  // Initialized, not listed: a prewarm at start shows a child within ~100 ms here.
  await new Promise((r) => setTimeout(r, 500));
  assertEquals(childPids(client.pid), [], "children before tools/list");
  const { tools } = await client.listTools();
  assert(tools.some((t) => t.name === "filesystem__read_file"));
  // Listed, no local call: a sandbox started after the list showed within ~1 s here (20 s allowed
  // the old prewarm on a loaded machine; this waits long enough to see one on an idle one).
  await new Promise((r) => setTimeout(r, 1500));
  await client.ping();
  assertEquals(stdSandboxes(client.pid), [], "a read sandbox before any local call");
  const read = await client.callTool({
    name: "filesystem__read_file",
    arguments: { path: "a.txt" },
  });
  assertEquals(read.isError, undefined, JSON.stringify(read));
  const started = stdSandboxes(client.pid);
  assert(started.length > 0, "the first read ran in a sandbox");
  const again = await client.callTool({
    name: "filesystem__read_file",
    arguments: { path: "a.txt" },
  });
  assertEquals(again.isError, undefined, JSON.stringify(again));
  assertEquals(stdSandboxes(client.pid), started, "the second read used the same sandbox");
});
