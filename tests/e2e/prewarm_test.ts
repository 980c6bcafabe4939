/**
 * `pml stdio` starts its read sandbox (and the bubblewrap probe before it) once the client has its
 * first tool list, not during the handshake, and the sandbox is then ready for the first read.
 */
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { waitFor } from "../../packages/pml/src/targets/stdio/_testing.ts";
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

Deno.test("pml stdio: no process is started before the first tools/list; the read sandbox after it", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
  ws.write("a.txt", "hello");
  await using client = await connectStdio(ws);
  // Initialized, not listed: a prewarm at start shows a child within ~100 ms here.
  await new Promise((r) => setTimeout(r, 500));
  assertEquals(childPids(client.pid), [], "children before tools/list");
  const { tools } = await client.listTools();
  assert(tools.some((t) => t.name === "filesystem__read_file"));
  await waitFor(() => stdSandboxes(client.pid).length > 0, "the read sandbox", 20_000);
  const started = stdSandboxes(client.pid);
  const read = await client.callTool({
    name: "filesystem__read_file",
    arguments: { path: "a.txt" },
  });
  assertEquals(read.isError, undefined, JSON.stringify(read));
  assertEquals(
    stdSandboxes(client.pid),
    started,
    "the read used the sandbox started after the list",
  );
});
