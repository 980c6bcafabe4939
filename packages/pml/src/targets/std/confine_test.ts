import { assertEquals, assertThrows } from "../../testing/assert.ts";
import { join } from "node:path";
import { PmlError } from "../../errors.ts";
import { tempWorkspace } from "../../testing/workspace.ts";
import { confinePath } from "./confine.ts";

Deno.test("confinePath: relative and absolute paths inside the workspace", async () => {
  await using ws = tempWorkspace();
  const roots = { workspace: ws.dir, read: [], write: [] };
  ws.write("src/a.txt", "a");
  assertEquals(confinePath("src/a.txt", "read", roots), join(ws.dir, "src/a.txt"));
  assertEquals(confinePath(join(ws.dir, "src/a.txt"), "read", roots), join(ws.dir, "src/a.txt"));
  assertEquals(confinePath("new/dir/file.txt", "write", roots), join(ws.dir, "new/dir/file.txt"));
  assertEquals(confinePath(".", "read", roots), ws.dir);
});

Deno.test("confinePath: .., absolute and prefix-sibling escapes are refused", async () => {
  await using ws = tempWorkspace();
  const roots = { workspace: ws.dir, read: [], write: [] };
  Deno.mkdirSync(`${ws.dir}-evil`);
  for (const p of ["../x", "src/../../x", "/etc/passwd", `${ws.dir}-evil/x`, "/"]) {
    assertThrows(() => confinePath(p, "read", roots), PmlError, "outside the workspace");
  }
});

Deno.test("confinePath: symlinks that leave the workspace are refused", async () => {
  await using ws = tempWorkspace();
  const roots = { workspace: ws.dir, read: [], write: [] };
  const outside = join(ws.root, "secret");
  Deno.mkdirSync(outside);
  Deno.writeTextFileSync(join(outside, "key"), "s3cret");
  Deno.symlinkSync(outside, join(ws.dir, "link"));
  Deno.symlinkSync(join(outside, "key"), join(ws.dir, "filelink"));
  Deno.symlinkSync(join(outside, "missing"), join(ws.dir, "dangling"));
  assertThrows(() => confinePath("link/key", "read", roots), PmlError, "resolves to");
  assertThrows(() => confinePath("filelink", "read", roots), PmlError, "outside the workspace");
  assertThrows(
    () => confinePath("link/new.txt", "write", roots),
    PmlError,
    "outside the workspace",
  );
  assertThrows(() => confinePath("dangling", "write", roots), PmlError, "missing target");
});

Deno.test("confinePath: extra grants, read vs write", async () => {
  await using ws = tempWorkspace();
  const shared = join(ws.root, "shared");
  Deno.mkdirSync(shared);
  const roots = { workspace: ws.dir, read: [shared], write: [] };
  assertEquals(confinePath(join(shared, "x"), "read", roots), join(shared, "x"));
  assertThrows(() => confinePath(join(shared, "x"), "write", roots), PmlError);
});

Deno.test("confinePath: bad input is a TypeError", () => {
  const roots = { workspace: "/tmp", read: [], write: [] };
  assertThrows(() => confinePath("", "read", roots), TypeError);
  assertThrows(() => confinePath(42, "read", roots), TypeError);
  assertThrows(() => confinePath("a\0b", "read", roots), TypeError, "NUL");
});

Deno.test("confinePath: a name starting with two dots inside the workspace is not outside", async () => {
  await using ws = tempWorkspace();
  const roots = { workspace: ws.dir, read: [], write: [] };
  ws.write("..foo", "x");
  ws.write("dir/..bar/y.txt", "y");
  assertEquals(confinePath("..foo", "read", roots), join(ws.dir, "..foo"));
  assertEquals(confinePath("..foo", "write", roots), join(ws.dir, "..foo"));
  assertEquals(confinePath("dir/..bar/y.txt", "read", roots), join(ws.dir, "dir/..bar/y.txt"));
  assertThrows(() => confinePath("..", "read", roots), PmlError, "outside the workspace");
});

Deno.test("confinePath: control files are readable but never writable, by any spelling", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["*"] } });
  const roots = { workspace: ws.dir, read: [], write: [] };
  ws.write(".pml/mcp.lock", "{}");
  ws.write(".mcp.json", "{}");
  ws.write(".vscode/mcp.json", "{}");
  ws.write(".vscode/settings.json", "{}");
  Deno.symlinkSync(join(ws.dir, ".pml.json"), join(ws.dir, "innocent.json"));
  Deno.symlinkSync(join(ws.dir, ".pml"), join(ws.dir, "state"));
  Deno.linkSync(join(ws.dir, ".mcp.json"), join(ws.dir, "hardlink.json"));
  assertEquals(confinePath(".pml.json", "read", roots), join(ws.dir, ".pml.json"));
  for (
    const p of [
      ".pml.json",
      "./.pml.json",
      "src/../.pml.json",
      join(ws.dir, ".pml.json"),
      ".pml",
      ".pml/",
      ".pml/mcp.lock",
      ".pml/audit.log",
      ".pml/new-file",
      ".mcp.json",
      ".vscode/mcp.json",
      ".vscode",
      ".cursor/mcp.json",
      ".gemini/settings.json",
      ".codex/config.toml",
      ".",
      "innocent.json",
      "state/mcp.lock",
      "hardlink.json",
    ]
  ) {
    assertThrows(() => confinePath(p, "write", roots), PmlError, "control file");
  }
  assertEquals(confinePath(".editorconfig", "write", roots), join(ws.dir, ".editorconfig"));
  assertEquals(confinePath(".pml.json.txt", "write", roots), join(ws.dir, ".pml.json.txt"));
});

Deno.test("confinePath: files the host runs later are never writable, here or in a write grant, by what they resolve to", async () => {
  await using ws = tempWorkspace();
  const other = join(ws.root, "other");
  Deno.mkdirSync(join(other, ".git", "hooks"), { recursive: true });
  ws.write(".git/config", "[core]\n");
  Deno.symlinkSync(join(ws.dir, ".git", "config"), join(ws.dir, "notes.txt"));
  const roots = { workspace: ws.dir, read: [], write: [other] };
  for (
    const p of [
      ".git/config",
      ".git/hooks/pre-commit",
      ".git",
      ".bashrc",
      ".zshrc",
      ".profile",
      ".gitconfig",
      ".gitmodules",
      ".vscode/tasks.json",
      ".idea/workspace.xml",
      ".claude/settings.json",
      ".claude/commands/x.md",
      "notes.txt",
      join(other, ".git/hooks/post-checkout"),
      join(other, ".bashrc"),
    ]
  ) {
    assertThrows(() => confinePath(p, "write", roots), PmlError, "no tool may change");
  }
  assertThrows(() => confinePath(join(other, ".pml.json"), "write", roots), PmlError, "control");
  // The refusal names what a symlink resolves to.
  assertThrows(
    () => confinePath("notes.txt", "write", roots),
    PmlError,
    `it resolves to "${join(ws.dir, ".git", "config")}"`,
  );
  // git's own work beside them stays writable.
  for (const p of [".git/index", ".git/objects/ab/cdef", ".git/refs/heads/main", ".gitignore"]) {
    assertEquals(confinePath(p, "write", roots), join(ws.dir, p));
  }
});
