import { assertEquals } from "../testing/assert.ts";
import { printable } from "./printable.ts";

Deno.test("printable: terminal and Unicode controls become visible escapes; text and tabs stay", () => {
  assertEquals(
    printable("\x1b[2K\r\x1b]8;;http://x\x07pml: ok\b\u202eevil\u200b\x9b"),
    "\\x1b[2K\\x0d\\x1b]8;;http://x\\x07pml: ok\\x08\\u{202e}evil\\u{200b}\\x9b",
  );
  assertEquals(printable("plain\ttext é ✓"), "plain\ttext é ✓");
});
