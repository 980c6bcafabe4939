/**
 * Attacks on the `.env` wall (issue 30 item 1): an agent whose read tools are allowed tries to get
 * the workspace's `.env` (whose keys would go to its model provider) without a human's yes: by
 * name, by other spellings of the path, through a symlink, other `.env*` files, from inside
 * `pml:execute`, and by approving its own question. None returns a secret. Next to the wall, the
 * ordinary work: other files read without a question, and the human's yes returns the file.
 */
import { join } from "node:path";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { pml } from "../../packages/pml/src/testing/cli.ts";

const SECRET = "sk-live-9f8e7d6c5b4a";

Deno.test("secret reads: no spelling of a .env path, no link and no nested call reads it without the human", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem", "pml"], ask: [], deny: [] },
  });
  ws.write(".env", `OPENAI_API_KEY=${SECRET}\n`);
  ws.write(".env.local", `LOCAL=${SECRET}\n`);
  ws.write(".envrc", `export TOKEN=${SECRET}\n`);
  ws.write("config/.env.production", `PROD=${SECRET}\n`);
  ws.write("sub/readme.md", "sub");
  Deno.symlinkSync("../.env", join(ws.dir, "sub", "notes.txt"));
  Deno.symlinkSync(".env", join(ws.dir, "innocent.md"));
  ws.write("README.md", "the ordinary file");
  await using g = await gatewayFor(ws, { tell: () => {} });

  const paths = [
    ".env",
    "./.env",
    "sub/../.env",
    join(ws.dir, ".env"),
    "sub/notes.txt",
    "innocent.md",
    ".env.local",
    ".envrc",
    "config/.env.production",
    "config//.env.production",
  ];
  let attempts = 0;
  for (const path of paths) {
    attempts++;
    const r = await g.client.callTool({ name: "filesystem__read_file", arguments: { path } });
    assert(!JSON.stringify(r).includes(SECRET), `read_file ${path}`);
    const body = r.structuredContent as Record<string, unknown>;
    assertEquals(body.status, "approval_required", path);
    assertEquals(body.approval_mode, "human", path);
    // The agent approves its own question: it waits for the human, still without the secret.
    attempts++;
    const self = await g.client.callTool({
      name: "pml__continue",
      arguments: { workflow_id: body.workflow_id, decision: "always" },
    });
    assert(!JSON.stringify(self).includes(SECRET), `pml:continue ${path}`);
  }
  for (const path of [".env", "sub/notes.txt", ".envrc"]) {
    attempts++;
    const r = await g.client.callTool({
      name: "pml__execute",
      arguments: {
        code: `return await mcp.filesystem.read_file({ path: ${JSON.stringify(path)} });`,
      },
    });
    assert(!JSON.stringify(r).includes(SECRET), `pml:execute ${path}`);
  }
  assertEquals(attempts, 23);

  // The ordinary work beside the wall.
  const readme = await g.client.callTool({
    name: "filesystem__read_file",
    arguments: { path: "README.md" },
  });
  assertEquals(textOf(readme), "the ordinary file");
  const listed = await g.client.callTool({
    name: "filesystem__list_directory",
    arguments: { path: "." },
  });
  assert(textOf(listed).includes(".env"), "names are not secret");
  const pending = JSON.parse((await pml(ws, "approvals", "--json")).stdout) as { id: string }[];
  assert(pending.length >= paths.length, JSON.stringify(pending));
  assertEquals((await pml(ws, "approve", pending[0].id)).code, 0);
  const done = await g.client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: pending[0].id, decision: "yes" },
  });
  assert(textOf(done).includes(SECRET), "the human's yes returns the file");
  assert(!ws.read(".pml.json").includes('read_file"'), "always added nothing");
});
