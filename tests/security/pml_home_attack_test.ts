/**
 * Attack (issue 37 item 6): PML's own home (`~/.pml`: the API key in `credentials.json`, the trust
 * store, the human-only text of pending approvals) under a trusted grant of the whole `HOME`
 * (`sandbox.write: ["${HOME}"]`, or `sandbox.read`), an explicit grant of `~/.pml` itself, and a
 * `PML_HOME` elsewhere whose parent folder is granted. The agent reads it through `shell:exec`
 * (`cat`, `ls`, `find`, a symlink made in the workspace), the read tools and `pml:execute`. PML's
 * home stays hidden under every grant, in both walls; beside it, the ordinary work under the grant
 * (a file written in `HOME`, `~/.gitconfig` read) still works.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { trustContentSync } from "../../packages/pml/src/config/trust_store.ts";

const KEY = "pml-key-SECRET-0123456789";
const APPROVAL = "human-only-approval-SECRET";

/** PML's home as `pml init` and a pending approval leave it. */
function plantHome(home: string): void {
  Deno.mkdirSync(join(home, "approvals"), { recursive: true });
  Deno.writeTextFileSync(join(home, "credentials.json"), JSON.stringify({ apiKey: KEY }));
  Deno.writeTextFileSync(join(home, "approvals", "a1.json"), JSON.stringify({ text: APPROVAL }));
}

/** The secrets, or the name of a pending approval where the request did not name it. */
const leaks = (text: string, asked: unknown) =>
  text.includes("SECRET") ||
  (text.includes("a1.json") && !JSON.stringify(asked).includes("a1.json"));

/** The grants a human may have trusted, each with where PML's home is (`PML_HOME` or `~/.pml`). */
function cases(ws: { home: string; root: string }) {
  const elsewhere = join(ws.root, "srv", "pml-home");
  return [
    { name: "write HOME", sandbox: { write: [ws.home] }, pmlHome: undefined },
    { name: "read HOME", sandbox: { read: [ws.home] }, pmlHome: undefined },
    { name: "read ~/.pml", sandbox: { read: [join(ws.home, ".pml")] }, pmlHome: undefined },
    {
      name: "PML_HOME, parent granted",
      sandbox: { write: [join(ws.root, "srv")] },
      pmlHome: elsewhere,
    },
  ];
}

Deno.test("attack pml_home: no grant shows PML's own home to the shell, the read tools or pml:execute", async () => {
  let tried = 0;
  for (const index of [0, 1, 2, 3]) {
    await using ws = tempWorkspace();
    const c = cases(ws)[index];
    const home = c.pmlHome ?? join(ws.home, ".pml");
    ws.write(
      ".pml.json",
      JSON.stringify({
        permissions: { allow: ["filesystem", "shell", "pml"], ask: [], deny: [] },
        sandbox: c.sandbox,
      }),
    );
    plantHome(home);
    // The human trusted it in the trust store of that PML home.
    if (c.pmlHome) trustContentSync(c.pmlHome, ws.dir, ws.read(".pml.json"));
    const env: Record<string, string> = { PATH: Deno.env.get("PATH") ?? "" };
    if (c.pmlHome) env.PML_HOME = c.pmlHome;
    await using gw = await gatewayFor(ws, { env });
    const shell = [
      `cat ${home}/credentials.json`,
      `ls -la ${home} ${home}/approvals; cat ${home}/approvals/*`,
      `find ${join(home, "..")} -maxdepth 3 -name '*.json' | xargs cat`,
      `grep -r SECRET ${join(home, "..")} 2>/dev/null`,
      `ln -s ${home}/credentials.json creds && cat creds`,
      `cp -r ${home} stolen 2>&1; cat stolen/credentials.json`,
    ];
    for (const command of shell) {
      tried++;
      const out = textOf(await gw.client.callTool({ name: "shell:exec", arguments: { command } }));
      assert(!leaks(out, command), `${c.name}: ${command} read it: ${out}`);
    }
    const tools = [
      { name: "filesystem:read_file", arguments: { path: join(home, "credentials.json") } },
      { name: "filesystem:read_file", arguments: { path: join(home, "approvals", "a1.json") } },
      { name: "filesystem:list_directory", arguments: { path: join(home, "approvals") } },
      { name: "filesystem:directory_tree", arguments: { path: join(home, "..") } },
      { name: "filesystem:search_files", arguments: { path: join(home, ".."), pattern: "a1" } },
      {
        name: "pml:execute",
        arguments: {
          code: `return await mcp.filesystem.read_file({ path: ${
            JSON.stringify(join(home, "credentials.json"))
          } });`,
        },
      },
    ];
    for (const call of tools) {
      tried++;
      const result = await gw.client.callTool(call);
      assert(
        !leaks(JSON.stringify(result), call),
        `${c.name}: ${call.name} read it: ${textOf(result)}`,
      );
    }
    // Nothing was written into it either.
    const write = await gw.client.callTool({
      name: "shell:exec",
      arguments: { command: `echo x > ${home}/credentials.json; echo x > ${home}/new` },
    });
    tried++;
    assert(!textOf(write).includes('"code":0'), textOf(write));
    assertEquals(JSON.parse(Deno.readTextFileSync(join(home, "credentials.json"))).apiKey, KEY);
  }
  console.error(`attack pml_home: ${tried} attempts under 4 grants, PML's home never read`);
});

Deno.test("pml_home: under a grant of HOME, the shell still writes HOME and reads ~/.gitconfig", async () => {
  await using ws = tempWorkspace();
  ws.write(
    ".pml.json",
    JSON.stringify({
      permissions: { allow: ["shell", "filesystem"], ask: [], deny: [] },
      sandbox: { write: [ws.home] },
    }),
  );
  Deno.writeTextFileSync(join(ws.home, ".gitconfig"), "[user]\n\tname = Ada\n");
  await using gw = await gatewayFor(ws, { env: { PATH: Deno.env.get("PATH") ?? "" } });
  const out = await gw.client.callTool({
    name: "shell:exec",
    arguments: { command: `echo ok > ${ws.home}/note && git config --global user.name` },
  });
  assertStringIncludes(textOf(out), "Ada");
  assertEquals(Deno.readTextFileSync(join(ws.home, "note")), "ok\n");
  const read = await gw.client.callTool({
    name: "filesystem:read_file",
    arguments: { path: join(ws.home, ".gitconfig") },
  });
  assertStringIncludes(textOf(read), "Ada");
});
