import { existsSync } from "node:fs";
import { join } from "node:path";
import { assertEquals } from "./testing/assert.ts";
import { entryExists, exists } from "./exists.ts";

Deno.test("exists: answers as node:fs existsSync for files, folders, links and what is missing", () => {
  const dir = Deno.makeTempDirSync({ prefix: "pml-exists-" });
  try {
    Deno.writeTextFileSync(join(dir, "file"), "x");
    Deno.mkdirSync(join(dir, "folder"));
    Deno.symlinkSync(join(dir, "file"), join(dir, "link"));
    Deno.symlinkSync(join(dir, "gone"), join(dir, "dangling"));
    const cases: [string, boolean][] = [
      ["file", true],
      ["folder", true],
      ["link", true],
      ["dangling", false], // a link to nothing does not exist
      ["missing", false],
      ["file/below-a-file", false], // ENOTDIR reads as "no", not as an error
      ["", true], // the folder itself
    ];
    for (const [name, expected] of cases) {
      const path = name ? join(dir, name) : dir;
      assertEquals(exists(path), expected, name);
      assertEquals(exists(path), existsSync(path), `${name}: same answer as node:fs`);
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("entryExists: a link counts as itself, dangling or not", () => {
  const dir = Deno.makeTempDirSync({ prefix: "pml-exists-" });
  try {
    Deno.writeTextFileSync(join(dir, "file"), "x");
    Deno.symlinkSync(join(dir, "gone"), join(dir, "dangling"));
    assertEquals(entryExists(join(dir, "file")), true);
    assertEquals(entryExists(join(dir, "dangling")), true);
    assertEquals(exists(join(dir, "dangling")), false);
    assertEquals(entryExists(join(dir, "missing")), false);
    assertEquals(entryExists(join(dir, "file", "below-a-file")), false);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
