import { join } from "node:path";
import { assert, assertEquals } from "../../testing/assert.ts";
import { tempWorkspace } from "../../testing/workspace.ts";
import { guardedPaths } from "../../config/control_files.ts";
import { restoreGuarded, snapshotGuarded } from "./kept_guarded.ts";

Deno.test("kept guarded files: changed, removed, replaced by a new folder or moved away, all put back", async () => {
  await using ws = tempWorkspace();
  ws.write(".git/config", "[core]\n");
  ws.write(".git/HEAD", "ref: refs/heads/main\n");
  ws.write(".git/hooks/pre-commit.sample", "#!/bin/sh\n");
  ws.write(".vscode/settings.json", "{}");
  ws.write(".gemini/settings.json", "{}");
  ws.write(".pml/audit.log", "line 1\n");
  const roots = [ws.dir];
  const kept = snapshotGuarded(guardedPaths(roots), roots);
  const sh = (script: string) =>
    new Deno.Command("/bin/sh", { args: ["-c", script], cwd: ws.dir }).outputSync();
  sh(
    [
      "printf '[core]\\n\\tfsmonitor = evil\\n' >> .git/config",
      "echo evil > .git/hooks/pre-commit",
      "mv .git .git-old && mkdir .git && echo x > .git/config",
      "rm -rf .gemini && mkdir .gemini && echo x > .gemini/settings.json",
      "mv .vscode vscode-moved",
      "echo 'line 2' >> .pml/audit.log",
    ].join("; "),
  );
  const changed = restoreGuarded(kept);
  assert(changed.length >= 3, JSON.stringify(changed));
  assertEquals(ws.read(".git/config"), "[core]\n");
  // The repository moved away came back whole (its other files with it), the hook removed.
  assertEquals(ws.read(".git/HEAD"), "ref: refs/heads/main\n");
  assert(!(await Deno.stat(join(ws.dir, ".git/hooks/pre-commit")).catch(() => false)));
  assert(!(await Deno.stat(join(ws.dir, ".git-old")).catch(() => false)));
  assert(!(await Deno.stat(join(ws.dir, "vscode-moved")).catch(() => false)));
  assertEquals(ws.read(".vscode/settings.json"), "{}");
  assertEquals(ws.read(".gemini/settings.json"), "{}");
  // pml's own log is left as pml wrote it.
  assertEquals(ws.read(".pml/audit.log"), "line 1\nline 2\n");
  // Nothing changed: nothing to put back.
  assertEquals(restoreGuarded(snapshotGuarded(guardedPaths(roots), roots)), []);
});

Deno.test("kept guarded files: a guarded file whose folder the command removed is put back with its folder", async () => {
  await using ws = tempWorkspace();
  ws.write(".git/config", "[core]\n");
  ws.write(".git/HEAD", "ref: refs/heads/main\n");
  ws.write(".git/worktrees/wt/HEAD", "ref: refs/heads/wt\n");
  ws.write(".git/worktrees/wt/commondir", "../..\n");
  ws.write(".git/worktrees/wt/gitdir", `${join(ws.dir, "wt", ".git")}\n`);
  ws.write("wt/.git", `gitdir: ${join(ws.dir, ".git", "worktrees", "wt")}\n`);
  const roots = [ws.dir];
  const kept = snapshotGuarded(guardedPaths(roots), roots);
  // What `git worktree remove wt` does.
  Deno.removeSync(join(ws.dir, "wt"), { recursive: true });
  Deno.removeSync(join(ws.dir, ".git", "worktrees", "wt"), { recursive: true });
  const changed = restoreGuarded(kept);
  assert(changed.includes(join(ws.dir, "wt", ".git")), JSON.stringify(changed));
  assertEquals(ws.read(".git/worktrees/wt/commondir"), "../..\n");
  assertEquals(ws.read("wt/.git"), `gitdir: ${join(ws.dir, ".git", "worktrees", "wt")}\n`);
});
