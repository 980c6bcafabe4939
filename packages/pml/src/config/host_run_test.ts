/**
 * The host-run and instruction classes' pieces (docs/security.md "Host-run and instruction files"):
 * the walk that finds git dirs and nested instruction files, the gitlinks of an index, the gated
 * part of `package.json`, and the shapes a write is judged by.
 */
import { join } from "node:path";
import { assert, assertEquals } from "../testing/assert.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import { guardedPathHit } from "./control_files.ts";
import { restoreGatedParts, scriptsParts } from "./package_scripts.ts";
import { gitlinks } from "./repo_guards.ts";
import { scanWorkspace } from "./workspace_scan.ts";

function git(cwd: string, ...args: string[]): string {
  const out = new Deno.Command("git", { args, cwd, stdout: "piped", stderr: "null" }).outputSync();
  return new TextDecoder().decode(out.stdout).trim();
}

Deno.test("scanWorkspace: git dirs of every shape and nested instruction files, not inside dependencies", async () => {
  await using ws = tempWorkspace();
  git(ws.dir, "init", "-q", "--bare", "bare");
  git(ws.dir, "init", "-q", "packages/x");
  ws.write("packages/x/AGENTS.md", "x");
  ws.write("packages/x/package.json", "{}");
  ws.write("node_modules/y/CLAUDE.md", "y");
  ws.write("node_modules/y/.git/HEAD", "ref: refs/heads/main\n");
  ws.write("node_modules/y/.git/config", "");
  ws.write("app.code-workspace", "{}");
  const scan = scanWorkspace(ws.dir);
  const rel = (paths: readonly string[]) => paths.map((p) => p.slice(ws.dir.length + 1)).sort();
  assertEquals(rel(scan.gitDirs), [".git", "bare", "packages/x/.git"]);
  assertEquals(rel(scan.instructions), ["packages/x/AGENTS.md"]);
  assertEquals(rel(scan.packageJsons), ["packages/x/package.json"]);
  assertEquals(rel(scan.codeWorkspaces), ["app.code-workspace"]);
});

Deno.test("gitlinks: the submodule entries of an index, in versions 2 and 4", async () => {
  await using ws = tempWorkspace();
  Deno.removeSync(join(ws.dir, ".git"), { recursive: true });
  git(ws.dir, "init", "-q");
  ws.write("a.txt", "a");
  git(ws.dir, "add", "a.txt");
  // A gitlink names a commit of the other repository, which this one need not hold.
  const commit = "1".repeat(40);
  for (const path of ["node_modules/x", "sub"]) {
    git(ws.dir, "update-index", "--add", "--cacheinfo", `160000,${commit},${path}`);
  }
  assertEquals(gitlinks(join(ws.dir, ".git", "index")), ["node_modules/x", "sub"]);
  git(ws.dir, "update-index", "--index-version", "4");
  assertEquals(gitlinks(join(ws.dir, ".git", "index")), ["node_modules/x", "sub"]);
  assertEquals(gitlinks(join(ws.dir, "missing")), []);
});

Deno.test("package scripts: unnamed scripts and packageManager are put back key by key; named scripts, dependencies and a 'preview' stay", async () => {
  await using ws = tempWorkspace();
  const path = ws.write(
    "package.json",
    JSON.stringify({ scripts: { test: "a", preview: "b" }, dependencies: {} }, null, 4) + "\n",
  );
  const before = scriptsParts([path]);
  Deno.writeTextFileSync(
    path,
    JSON.stringify(
      {
        scripts: { test: "a2", preview: "b", build: "c", postinstall: "evil", pretest: "evil" },
        dependencies: { x: "1" },
        packageManager: "yarn@evil",
      },
      null,
      4,
    ) + "\n",
  );
  const created = ws.write("tools/package.json", '{"scripts":{"prepare":"evil","lint":"l"}}');
  const restored = restoreGatedParts(before, [path, created]);
  assertEquals(restored.map((r) => r.keys), [
    ["scripts.postinstall", "scripts.pretest", "packageManager"],
    ["scripts.prepare"],
  ]);
  const pkg = JSON.parse(Deno.readTextFileSync(path));
  assertEquals(pkg.scripts, { test: "a2", preview: "b", build: "c" });
  assertEquals(pkg.dependencies, { x: "1" });
  assert(Deno.readTextFileSync(path).startsWith('{\n    "scripts"'), "its indentation kept");
  assertEquals(JSON.parse(Deno.readTextFileSync(created)).scripts, { lint: "l" });
  // A `view` script makes `preview` a hook of it: adding one is put back, the kept `preview` not.
  const again = scriptsParts([path]);
  const withView = JSON.parse(Deno.readTextFileSync(path));
  withView.scripts.view = "v";
  withView.scripts.postview = "evil";
  Deno.writeTextFileSync(path, JSON.stringify(withView, null, 4) + "\n");
  assertEquals(restoreGatedParts(again).map((r) => r.keys), [["scripts.postview"]]);
});

Deno.test("guardedPathHit: git files, gitfiles, a HEAD by hand, a code-workspace and instruction files are judged by shape", async () => {
  await using ws = tempWorkspace();
  git(ws.dir, "init", "-q", "--bare", "bare");
  ws.write("plain/readme.md", "x");
  const kind = (rel: string) => guardedPathHit(join(ws.dir, rel), [ws.dir])?.kind;
  for (
    const rel of [
      ".git/commondir",
      ".git/worktrees/x/gitdir",
      ".git/modules/m/config",
      "bare/config",
      "bare/hooks/pre-commit",
      "plain/.git",
      "plain/HEAD",
      "x.code-workspace",
      ".npmrc",
      ".cargo/config.toml",
    ]
  ) assertEquals(kind(rel), "protected", rel);
  for (
    const rel of ["CLAUDE.md", "plain/AGENTS.md", ".continue/x.md", ".github/instructions/a.md"]
  ) {
    assertEquals(kind(rel), "instruction", rel);
  }
  for (const rel of ["plain/readme.md", "package.json", ".git/info/exclude", "src/config.ts"]) {
    assertEquals(kind(rel), undefined, rel);
  }
});

Deno.test("scanWorkspace: a folder read before is read again when an entry appears, even with its modification time set back", async () => {
  await using ws = tempWorkspace();
  ws.write("a/b/readme.md", "x");
  const old = new Date(Date.now() - 60_000);
  for (const rel of ["a/b", "a", "."]) Deno.utimeSync(join(ws.dir, rel), old, old);
  // Change times too must have settled before a listing is kept.
  await new Promise((r) => setTimeout(r, 2100));
  assertEquals(scanWorkspace(ws.dir).gitDirs.length, 1, "the workspace's own .git");
  git(join(ws.dir, "a", "b"), "init", "-q", "sub");
  // What a command hiding it would do: the folder's modification time put back as it was.
  Deno.utimeSync(join(ws.dir, "a", "b"), old, old);
  const found = scanWorkspace(ws.dir).gitDirs.map((d) => d.slice(ws.dir.length + 1));
  assertEquals(found.sort(), [".git", "a/b/sub/.git"]);
});
