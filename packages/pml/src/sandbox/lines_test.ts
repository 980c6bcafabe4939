import { assertEquals } from "../testing/assert.ts";
import { forEachLine } from "./_lines.ts";

async function linesOf(chunks: (string | Uint8Array)[]): Promise<string[]> {
  const encoder = new TextEncoder();
  async function* gen() {
    for (const c of chunks) yield typeof c === "string" ? encoder.encode(c) : c;
  }
  const lines: string[] = [];
  await forEachLine(gen(), (line) => lines.push(line));
  return lines;
}

Deno.test("forEachLine: lines across chunks, several per chunk, empty ones; no unfinished last", async () => {
  assertEquals(await linesOf(["a", "b\nc\n\nd", "e", "\nf"]), ["ab", "c", "", "de"]);
  assertEquals(await linesOf(["\n", "x\n"]), ["", "x"]);
  assertEquals(await linesOf([]), []);
});

Deno.test("forEachLine: a character split between chunks, a long line in many chunks", async () => {
  const bytes = new TextEncoder().encode("é€\n");
  assertEquals(await linesOf([bytes.subarray(0, 1), bytes.subarray(1, 3), bytes.subarray(3)]), [
    "é€",
  ]);
  const long = "y".repeat(1_000_000);
  const parts = Array.from({ length: 100 }, (_, i) => long.slice(i * 10_000, (i + 1) * 10_000));
  assertEquals(await linesOf([...parts, "\nz\n"]), [long, "z"]);
});

Deno.test("forEachLine: a stream that errors ends the lines it had", async () => {
  async function* failing() {
    yield new TextEncoder().encode("one\ntw");
    throw new Error("gone");
  }
  const lines: string[] = [];
  await forEachLine(failing(), (line) => lines.push(line));
  assertEquals(lines, ["one"]);
});
