import { assertEquals, assertMatch, assertNotEquals } from "../testing/assert.ts";
import { exposedName, isToolId } from "./names.ts";

Deno.test("exposedName: ns:action → ns__action", () => {
  assertEquals(exposedName("filesystem:read_file"), "filesystem__read_file");
  assertEquals(exposedName("pml:execute"), "pml__execute");
});

Deno.test("exposedName: unsafe characters replaced, long ids shortened with a stable hash", () => {
  assertEquals(exposedName("my.org:do-it"), "my_org__do-it");
  const long = `ns:${"a".repeat(80)}`;
  const name = exposedName(long);
  assertMatch(name, /^[A-Za-z0-9_-]{1,64}$/);
  assertEquals(exposedName(long), name);
  assertNotEquals(exposedName(`ns:${"a".repeat(79)}b`), name);
});

Deno.test("isToolId", () => {
  assertEquals(isToolId("filesystem:read_file"), true);
  assertEquals(isToolId("filesystem__read_file"), false);
  assertEquals(isToolId("a:b:c"), false);
});
