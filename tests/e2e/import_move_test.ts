/**
 * `bin/pml import --move` spawned with a private HOME, as a user with servers in their user-level
 * files runs it: the servers the workspace owns (its files, its entry of `~/.claude.json`) leave
 * the client's files; those of the user's own files (`~/.claude.json`'s top level,
 * `~/.codex/config.toml`, `~/.gemini/settings.json`, `~/.config/opencode/opencode.json`,
 * `~/.qwen/settings.json`) serve every other project too and stay, said on the terminal, unless
 * `--move-user`; a file holding both kinds is written once, its backup the original.
 *
 * Remote servers (a `url`) only: `pml import` pins stdio servers by starting them, remote ones on
 * first use, so nothing leaves the machine.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { runPml } from "./_spawn.ts";

const url = (name: string) => `https://${name}.example.test/mcp`;

/** The user-level files of every client, each with one remote server, and `~/.claude.json`. */
function userFiles(home: string, ws: string): Record<string, string> {
  const files: Record<string, string> = {
    ".claude.json": JSON.stringify({
      numStartups: 3,
      mcpServers: { "user-claude": { type: "http", url: url("user-claude") } },
      projects: {
        [ws]: { mcpServers: { "this-project": { type: "http", url: url("this-project") } } },
        "/elsewhere": { mcpServers: { other: { type: "http", url: url("other") } } },
      },
    }),
    ".codex/config.toml": `model = "m"\n\n[mcp_servers.user-codex]\nurl = "${url("user-codex")}"\n`,
    ".gemini/settings.json": JSON.stringify({
      mcpServers: { "user-gemini": { httpUrl: url("g") } },
    }),
    ".qwen/settings.json": JSON.stringify({ mcpServers: { "user-qwen": { httpUrl: url("q") } } }),
    ".config/opencode/opencode.json": JSON.stringify({
      mcp: { "user-opencode": { type: "remote", url: url("o") } },
    }),
  };
  for (const [rel, text] of Object.entries(files)) {
    Deno.mkdirSync(join(home, rel, ".."), { recursive: true });
    Deno.writeTextFileSync(join(home, rel), text);
  }
  return files;
}

const exists = (path: string) => Deno.stat(path).then(() => true, () => false);

Deno.test("e2e import --move: this project's servers leave the client files; the user-level files are imported from and left as they were", async () => {
  await using ws = tempWorkspace();
  ws.write(".mcp.json", JSON.stringify({ mcpServers: { local: { type: "http", url: url("l") } } }));
  const files = userFiles(ws.home, ws.dir);
  const run = await runPml(ws, ["import", "--yes", "--move"]);
  assertEquals(run.code, 0, run.text);
  const imported = Object.keys(JSON.parse(ws.read(".pml.json")).private_mcps).sort();
  assertEquals(imported, [
    "local",
    "this-project",
    "user-claude",
    "user-codex",
    "user-gemini",
    "user-opencode",
    "user-qwen",
  ]);
  // The workspace's own: gone from the client's files.
  assertEquals(JSON.parse(ws.read(".mcp.json")).mcpServers, {});
  const claude = JSON.parse(Deno.readTextFileSync(join(ws.home, ".claude.json")));
  assertEquals(claude.projects[ws.dir].mcpServers, {});
  // The user's own: every other project still has them.
  assertEquals(Object.keys(claude.mcpServers), ["user-claude"]);
  assertEquals(Object.keys(claude.projects["/elsewhere"].mcpServers), ["other"]);
  for (const rel of Object.keys(files).filter((f) => f !== ".claude.json")) {
    assertEquals(Deno.readTextFileSync(join(ws.home, rel)), files[rel], rel);
    assert(!(await exists(join(ws.home, `${rel}.backup`))), `${rel} was not rewritten`);
  }
  assertEquals(run.text.match(/^Removed .*\.claude\.json/gm)?.length, 1, run.text);
  assertStringIncludes(run.text, `Left "user-gemini" in ~/.gemini/settings.json`);
  assertStringIncludes(run.text, "--move-user");
});

Deno.test("e2e import --move-user: a ~/.claude.json with a project and a top-level server is written once, its backup the original", async () => {
  await using ws = tempWorkspace();
  const files = userFiles(ws.home, ws.dir);
  const run = await runPml(ws, ["import", "--yes", "--move-user", "--from", "claude"]);
  assertEquals(run.code, 0, run.text);
  assertEquals(run.text.match(/^Removed /gm)?.length, 1, run.text);
  assertStringIncludes(run.text, `Removed "this-project", "user-claude" from`);
  const path = join(ws.home, ".claude.json");
  assertEquals(Deno.readTextFileSync(`${path}.backup`), files[".claude.json"], "the original");
  const claude = JSON.parse(Deno.readTextFileSync(path));
  assertEquals(claude.mcpServers, {});
  assertEquals(claude.projects[ws.dir].mcpServers, {});
  assertEquals(Object.keys(claude.projects["/elsewhere"].mcpServers), ["other"]);
  assertEquals(claude.numStartups, 3, "every other key kept");
  // Only the client asked for: the others' user files are untouched.
  assertEquals(
    Deno.readTextFileSync(join(ws.home, ".gemini/settings.json")),
    files[".gemini/settings.json"],
  );
});
