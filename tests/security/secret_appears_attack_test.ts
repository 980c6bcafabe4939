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
import { HOST_VIEW_REUSE_MS } from "../../packages/pml/src/sandbox/host_view.ts";
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

Deno.test("entries replaced between calls: a secret created again or saved by a rename stays hidden, a guarded file saved by a rename stays read-only", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell"], ask: [], deny: [] } });
  const config = ws.write(".git/config", "[core]\n\tbare = false\n");
  const aws = join(ws.home, ".aws", "credentials");
  const claude = join(ws.home, ".claude.json");
  Deno.mkdirSync(join(aws, ".."));
  Deno.writeTextFileSync(aws, "old\n");
  Deno.writeTextFileSync(claude, "{}\n");
  await using agent = await connectStdio(ws);
  const shell = async (command: string, args?: string[]) =>
    textOf(await agent.callTool({ name: "shell__exec", arguments: { command, args } }));
  const before = await shell("cat", [aws, claude]); // the warm sandbox hides both
  assertEquals(before.includes("old"), false, before);

  // The host replaces each: the folder removed and made again, the file and `.git/config` saved
  // by writing a new file and renaming it over the old one (as editors, agents and `git` do).
  Deno.removeSync(join(aws, ".."), { recursive: true });
  Deno.mkdirSync(join(aws, ".."));
  Deno.writeTextFileSync(aws, `${MARK}\n`);
  Deno.writeTextFileSync(`${claude}.tmp`, `{"token":"${MARK}"}\n`);
  Deno.renameSync(`${claude}.tmp`, claude);
  Deno.writeTextFileSync(`${config}.lock`, "[core]\n\tbare = false\n");
  Deno.renameSync(`${config}.lock`, config);

  // At once: the guarded file, checked on every call.
  const wrote = await shell("echo '[core] fsmonitor = evil' >> .git/config");
  assertEquals(Deno.readTextFileSync(config), "[core]\n\tbare = false\n", wrote);
  // After the agent's turn: the secrets, from the next look at the machine.
  await new Promise((r) => setTimeout(r, HOST_VIEW_REUSE_MS + 300));
  const after = await shell("cat", [aws, claude]);
  assertEquals(after.includes(MARK), false, `the new entries are hidden: ${after}`);
  // Beside the walls: the workspace is still writable, a plain file in HOME reads.
  ws.write("notes.txt", "x");
  await shell("echo more >> notes.txt");
  assertEquals(ws.read("notes.txt"), "xmore\n");
  Deno.writeTextFileSync(join(ws.home, "plain.txt"), `${PLAIN}\n`);
  assert((await shell("cat", [join(ws.home, "plain.txt")])).includes(PLAIN));
});
