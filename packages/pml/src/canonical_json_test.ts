import { assertEquals, assertNotEquals } from "./testing/assert.ts";
import { canonicalJson } from "./canonical_json.ts";

Deno.test("canonicalJson: keys sorted at every level, arrays kept in order, no whitespace", () => {
  assertEquals(
    canonicalJson({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: null } }),
    '{"a":{"c":null,"d":[3,{"y":2,"z":1}]},"b":1}',
  );
  assertEquals(canonicalJson({ x: 1, y: 2 }), canonicalJson({ y: 2, x: 1 }));
  assertNotEquals(canonicalJson([1, 2]), canonicalJson([2, 1]));
  assertEquals(canonicalJson(undefined), "null");
  assertEquals(canonicalJson({ gone: undefined, kept: [undefined] }), '{"kept":[null]}');
});

Deno.test("canonicalJson: arguments nested 5,000 levels deep give their JSON, not a stack overflow", () => {
  let deep: unknown = "leaf";
  for (let i = 0; i < 5_000; i++) deep = { b: deep, a: i };
  const json = canonicalJson(deep);
  assertEquals(json.startsWith('{"a":4999,"b":{"a":4998,'), true);
  assertEquals(JSON.stringify(JSON.parse(json)) === json, true);
});
