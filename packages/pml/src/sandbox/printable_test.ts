import { assert, assertEquals } from "../testing/assert.ts";
import { printable, printableLine, printableOutput } from "./printable.ts";

Deno.test("printable: terminal and Unicode controls become visible escapes; text and tabs stay", () => {
  assertEquals(
    printable("\x1b[2K\r\x1b]8;;http://x\x07pml: ok\b\u202eevil\u200b\x9b"),
    "\\x1b[2K\\x0d\\x1b]8;;http://x\\x07pml: ok\\x08\\u{202e}evil\\u{200b}\\x9b",
  );
  assertEquals(printable("plain\ttext é ✓"), "plain\ttext é ✓");
});

Deno.test("printableLine escapes newlines and tabs too; printableOutput keeps JSON valid and the same", () => {
  assertEquals(printableLine("a\nb\tc\x1b[2J"), "a\\x0ab\\x09c\\x1b[2J");
  const json = JSON.stringify({ tool: "x\u202eevil\x7f\x9b", esc: "\x1b[2J" }, null, 2);
  const shown = printableOutput(json);
  // deno-lint-ignore no-control-regex
  assert(!/[\x1b\x7f-\x9f\u202e]/.test(shown), shown);
  assertEquals(JSON.parse(shown), JSON.parse(json));
  assertEquals(printableOutput("a\x1b[2J\rb\n"), "a\\x1b[2J\\x0db\n");
});
