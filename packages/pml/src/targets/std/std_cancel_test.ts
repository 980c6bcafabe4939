/**
 * The std modules and a cancelled call (`ctx.signal`, aborted by the sandbox runner on the
 * protocol's `cancel`): `search_files` stops its walk, `shell:exec` does not start its command.
 * The kill of a running command is held end to end by `tests/e2e/cancel_test.ts`.
 */
import { join } from "node:path";
import { search_files } from "../../../../../registry/std/filesystem.ts";
import { exec } from "../../../../../registry/std/shell.ts";
import { assertEquals, assertRejects } from "../../testing/assert.ts";
import { tempWorkspace } from "../../testing/workspace.ts";

Deno.test("std search_files: a cancelled walk stops with an AbortError; an open one finds", async () => {
  await using ws = tempWorkspace();
  Deno.mkdirSync(join(ws.dir, "a/b"), { recursive: true });
  Deno.writeTextFileSync(join(ws.dir, "a/b/needle.txt"), "");
  const args = { path: ws.dir, pattern: "needle" };
  const open = new AbortController();
  assertEquals(
    await search_files(args, { workspace: ws.dir, signal: open.signal }),
    "a/b/needle.txt",
  );
  const cancelled = new AbortController();
  cancelled.abort("the client cancelled the call");
  const err = await assertRejects(
    () => search_files(args, { workspace: ws.dir, signal: cancelled.signal }),
  );
  assertEquals((err as Error).name, "AbortError");
});

Deno.test("std shell:exec: a call cancelled before it starts runs nothing", async () => {
  await using ws = tempWorkspace();
  const cancelled = new AbortController();
  cancelled.abort("the client cancelled the call");
  const err = await assertRejects(
    () => exec({ command: "touch ran" }, { workspace: ws.dir, signal: cancelled.signal }),
  );
  assertEquals((err as Error).name, "AbortError");
  assertEquals([...Deno.readDirSync(ws.dir)].some((e) => e.name === "ran"), false);
});
