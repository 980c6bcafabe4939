import { assertEquals, assertThrows } from "../src/testing/assert.ts";
import { bundleParts, sourceOwners } from "./_bundle_parts.ts";

Deno.test("sourceOwners: each character belongs to the source of the segment it falls in, per line", () => {
  // Line 1: "abc" from a.ts, "def" from b.ts; line 2: "gh" from the bundler (a segment of one
  // field), "ij" from a.ts again (source index back by 1).
  const code = "abcdef\nghij";
  const map = { sources: ["a.ts", "b.ts"], mappings: "AAAA,GCAA;A,EDAA" };
  assertEquals([...sourceOwners(code, map)], [0, 0, 0, 1, 1, 1, -1, -1, -1, 0, 0]);
});

Deno.test("sourceOwners: a malformed segment is an error, not a silent zero", () => {
  assertThrows(
    () => sourceOwners("ab", { sources: ["a.ts"], mappings: "A!AA" }),
    SyntaxError,
    "A!AA",
  );
});

Deno.test("bundleParts: bytes by group, the larger group first by the gzip bytes it adds", () => {
  const big = Array.from({ length: 400 }, (_, i) => `v${i * 7919 % 1000}`).join(",");
  const code = `${big}xyz`;
  // Segment 1 at column 0 from src/a/x.ts, segment 2 at the column of "xyz" from src/b/y.ts.
  const column = big.length;
  const vlq = (n: number) => {
    const B = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let v = n < 0 ? (-n << 1) | 1 : n << 1;
    let out = "";
    do {
      let digit = v & 31;
      v >>>= 5;
      if (v > 0) digit |= 32;
      out += B[digit];
    } while (v > 0);
    return out;
  };
  const map = { sources: ["src/a/x.ts", "src/b/y.ts"], mappings: `AAAA,${vlq(column)}CAA` };
  const parts = bundleParts(code, map, (s) => s.split("/").slice(0, 2).join("/"));
  assertEquals(parts.map((p) => [p.name, p.bytes]), [["src/a", big.length], ["src/b", 3]]);
  assertEquals(parts[0].gzBytes > parts[1].gzBytes, true);
});
