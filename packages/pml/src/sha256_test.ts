import { createHash } from "node:crypto";
import { assertEquals } from "./testing/assert.ts";
import { sha256Hex, sha256HexAsync } from "./sha256.ts";

/** Texts whose UTF-8 bytes are not their code units: what a hash of `.pml.json` may meet. */
const TEXTS = [
  "",
  "x",
  '{"permissions":{"allow":["filesystem"],"ask":[],"deny":[]}}\n',
  "é日本語🙂\u0000\r\n\t",
  "\uD800 lone high, lone low \uDC00, reversed \uDC00\uD800", // ill-formed UTF-16
  "\uFEFF{}", // a byte order mark is part of the content
  "a".repeat(55), // one SHA-256 block less the padding's 9 bytes, and the edges around it
  "a".repeat(56),
  "a".repeat(64),
  "🙂".repeat(5_000), // several blocks, 4-byte characters across block edges
];

Deno.test("sha256Hex and sha256HexAsync: the same hex as node:crypto's createHash over the UTF-8 text", async () => {
  for (const text of TEXTS) {
    const expected = createHash("sha256").update(text).digest("hex");
    assertEquals(sha256Hex(text), expected, JSON.stringify(text.slice(0, 40)));
    assertEquals(await sha256HexAsync(text), expected, JSON.stringify(text.slice(0, 40)));
  }
  const bytes = new Uint8Array([0, 0xff, 0xc3, 0x28, 0xed, 0xa0, 0x80]); // not UTF-8 at all
  assertEquals(sha256Hex(bytes), createHash("sha256").update(bytes).digest("hex"));
  // A known vector (FIPS 180-2, "abc"), so that both cannot agree on a wrong encoding.
  assertEquals(
    await sha256HexAsync("abc"),
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
  );
});
