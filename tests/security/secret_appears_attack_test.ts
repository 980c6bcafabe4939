/**
 * Attack: a secret that appears while `pml stdio` sits between an agent's calls (the model
 * thinking), read by the next call from `shell:exec`. The policies' look at the machine is taken
 * ahead of the calls (`sandbox/look_ahead.ts`) instead of on the first call after a pause, so it
 * must still be a look from after the secret appeared (at most `HOST_VIEW_REUSE_MS` old). Next to
 * the wall: a plain file that appeared in the same HOME at the same moment reads. Family:
 * secrets_read.
 */
import { join } from "node:path";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { HOST_VIEW_REUSE_MS } from "../../packages/pml/src/sandbox/policy.ts";
import { connectStdio } from "../e2e/_spawn.ts";

const MARK = "SECRET_MARK_57";
const PLAIN = "PLAIN_MARK_57";

Deno.test("secret appears between calls: the next call's shell:exec cannot read it, a plain file beside it reads", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell"], ask: [], deny: [] } });
  await using agent = await connectStdio(ws);
  const cat = async (...paths: string[]) =>
    textOf(
      await agent.callTool({ name: "shell__exec", arguments: { command: "cat", args: paths } }),
    );
  assert(!(await cat(join(ws.home, "none"))).includes(PLAIN)); // looks taken and kept from here
  // One secret per turn: each appears while the gateway waits for the agent's next call.
  for (const rel of [".aws/credentials", ".kube/config", ".docker/config.json"]) {
    const secret = join(ws.home, rel);
    const plain = join(ws.home, `${rel.replaceAll("/", "_")}.txt`);
    Deno.mkdirSync(join(secret, ".."), { recursive: true });
    Deno.writeTextFileSync(secret, `${MARK}\n`);
    Deno.writeTextFileSync(plain, `${PLAIN}\n`);
    // The agent's turn: longer than a look is reused, shorter than the look-ahead lasts.
    await new Promise((r) => setTimeout(r, HOST_VIEW_REUSE_MS + 300));
    const after = await cat(plain, secret);
    assert(after.includes(PLAIN), `the plain file reads: ${after}`);
    assertEquals(after.includes(MARK), false, `${rel} is hidden: ${after}`);
  }
});
