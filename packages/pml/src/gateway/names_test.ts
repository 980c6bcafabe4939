import { assert, assertEquals, assertMatch, assertNotEquals } from "../testing/assert.ts";
import { exposedName, isToolId, MAX_EXPOSED_NAME } from "./names.ts";

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

Deno.test("exposedName: the longest client prefix (Claude Code's mcp__pml__) still fits 64 characters", () => {
  assertEquals(MAX_EXPOSED_NAME, 54);
  // 60 characters: within DESIGN's 64, but 70 with Claude Code's prefix, 64 with opencode's.
  const id = `reporting:${"summarise_quarterly_sales_".repeat(2)}`;
  for (const prefix of ["mcp__pml__", "pml_", "mcp_pml_", "pml"]) {
    assert((prefix + exposedName(id)).length <= 64, prefix);
  }
  assertEquals(exposedName(id).length, 54);
  assertMatch(exposedName(id), /^reporting__summarise_quarterly_sales_summaris_[0-9a-f]{8}$/);
  // Names that fit are unchanged.
  const fits = `ns:${"a".repeat(50)}`;
  assertEquals(exposedName(fits), `ns__${"a".repeat(50)}`);
});

Deno.test("isToolId", () => {
  assertEquals(isToolId("filesystem:read_file"), true);
  assertEquals(isToolId("filesystem__read_file"), false);
  assertEquals(isToolId("a:b:c"), false);
});
