import { assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { waitForLine } from "./wait_for_line.ts";

/** A byte stream that yields `chunks` one by one, as a pipe hands over what was written. */
function chunked(...chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return ReadableStream.from(chunks);
}

const bytes = (text: string) => new TextEncoder().encode(text);

Deno.test("waitForLine: a line split across chunks (in a UTF-8 character, in the port) is read whole; the rest is handed over", async () => {
  const line = bytes("starting…\nlistening on http://127.0.0.1:4242/mcp\nserved 1\n");
  const ellipsis = line.indexOf(0xe2); // "…" is 3 bytes: cut it in the middle
  const port = line.indexOf(bytes(":4242")[0]) + 2; // cut the port after its first digit
  const newline = line.indexOf(bytes("\ns")[0], port); // and the next line in two
  const { match, printed, rest } = await waitForLine(
    chunked(
      line.slice(0, ellipsis + 1),
      line.slice(ellipsis + 1, port),
      line.slice(port, newline + 3),
      line.slice(newline + 3),
      bytes("bye\n"),
    ),
    /listening on (http:\/\/\S+)$/m,
    "the server",
  );
  assertEquals(match[1], "http://127.0.0.1:4242/mcp");
  assertEquals(printed, "starting…\nlistening on http://127.0.0.1:4242/mcp\nse");
  assertEquals(await rest, "rved 1\nbye\n");
});

Deno.test("waitForLine: a last line without its newline matches once the stream has ended", async () => {
  const { match, rest } = await waitForLine(
    chunked(bytes("port=4"), bytes("242")),
    /port=(\d+)/,
    "x",
  );
  assertEquals(match[1], "4242");
  assertEquals(await rest, "");
});

Deno.test("waitForLine: a child that exits first is an error naming it and quoting all it printed", async () => {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "console.log('loading'); console.log('Error: port 80 is taken'); Deno.exit(3)"],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const err = await assertRejects(
    () => waitForLine(child.stdout, /listening on (\S+)/, "pml-server serve"),
    Error,
    "pml-server serve ended its output before printing a line that matches /listening on (\\S+)/",
  );
  assertStringIncludes(err.message, JSON.stringify("loading\nError: port 80 is taken\n"));
  assertEquals((await child.status).code, 3);
});

Deno.test("waitForLine refuses a global or sticky pattern (its exec would start where the last left off)", async () => {
  await assertRejects(() => waitForLine(chunked(bytes("a\n")), /a/g, "x"), TypeError, "/a/g");
});
