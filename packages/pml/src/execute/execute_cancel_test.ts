/**
 * A `pml:execute` run cancels the calls its code left running when it ends: a nested
 * `shell:exec` past its `RPC_TIMEOUT` no longer runs on to its own `timeout_ms`.
 */
import { pidsMentioning } from "../procfs.ts";
import { assert, assertEquals } from "../testing/assert.ts";
import { gatewayFor, tempWorkspace } from "../testing/workspace.ts";
import { execute } from "./_test_helpers.ts";

Deno.test("pml:execute: a nested shell:exec still running when the run ends is killed", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell:exec"], ask: [], deny: [] } });
  await using g = await gatewayFor(ws, { execute: { rpcTimeoutMs: 3_000 } });
  const marker = String(600_000_000 + Math.floor(Math.random() * 300_000_000));
  let seen = false;
  let watching = true;
  const watch = (async () => {
    while (watching) {
      seen ||= pidsMentioning(marker).length > 0;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  try {
    const body = await execute(
      g.client,
      `try {
         await mcp.shell.exec({ command: "sleep ${marker} & wait", timeout_ms: 600000 });
       } catch (e) { return e.code; }`,
    );
    assertEquals(body.result, "RPC_TIMEOUT");
    assert(seen, "the command ran while the code waited");
    let left = pidsMentioning(marker);
    for (let i = 0; i < 600 && left.length; i++) {
      await new Promise((r) => setTimeout(r, 50));
      left = pidsMentioning(marker);
    }
    assertEquals(left, [], "the command the run left running is gone");
  } finally {
    watching = false;
    await watch;
    for (const pid of pidsMentioning(marker)) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }
  }
});
