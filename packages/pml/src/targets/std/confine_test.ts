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
