import { PassThrough } from "node:stream";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { idFromPrefix, LineStdioTransport, MessageTooLargeError } from "./stdio_transport.ts";

function harness(limit: number) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const out: string[] = [];
  stdout.on("data", (c: Uint8Array) => out.push(new TextDecoder().decode(c)));
  const transport = new LineStdioTransport(stdin, stdout, limit);
  const messages: unknown[] = [];
  const errors: Error[] = [];
  transport.onmessage = (m) => messages.push(m);
  transport.onerror = (e) => errors.push(e);
  return {
    stdin,
    transport,
    messages,
    errors,
    replies: () => out.join("").split("\n").filter(Boolean).map((l) => JSON.parse(l)),
  };
}

const flush = () => new Promise((r) => setTimeout(r, 0));

Deno.test("stdio transport: messages split across chunks and several per chunk", async () => {
  const h = harness(1024);
  await h.transport.start();
  const a = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
  const b = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" });
  h.stdin.write(a.slice(0, 5));
  h.stdin.write(a.slice(5) + "\n" + b + "\r\n\n");
  await flush();
  assertEquals(h.messages, [JSON.parse(a), JSON.parse(b)]);
  assertEquals(h.errors, []);
  await h.transport.close();
});

Deno.test("stdio transport: a line over the limit is answered with its id and the next one is served", async () => {
  const h = harness(1000);
  let closed = false;
  h.transport.onclose = () => (closed = true);
  await h.transport.start();
  const big = JSON.stringify({
    jsonrpc: "2.0",
    id: 7,
    method: "tools/call",
    params: { x: "a".repeat(5000) },
  });
  for (let i = 0; i < big.length; i += 300) h.stdin.write(big.slice(i, i + 300));
  h.stdin.write("\n" + JSON.stringify({ jsonrpc: "2.0", id: 8, method: "ping" }) + "\n");
  await flush();
  assertEquals(h.errors.length, 1);
  assert(h.errors[0] instanceof MessageTooLargeError);
  const [reply] = h.replies();
  assertEquals(reply.id, 7);
  assertEquals(reply.error.code, -32600);
  assertStringIncludes(reply.error.message, "too large");
  assertEquals(h.messages, [{ jsonrpc: "2.0", id: 8, method: "ping" }]);
  assert(!closed, "the transport must stay open");
  await h.transport.close();
});

Deno.test("stdio transport: bad JSON and non-JSON-RPC lines reach onerror, nothing else is lost", async () => {
  const h = harness(1000);
  await h.transport.start();
  h.stdin.write(
    "not json\n" + JSON.stringify({ hello: 1 }) + "\n" +
      JSON.stringify({ jsonrpc: "2.0", id: 3, method: "ping" }) + "\n",
  );
  await flush();
  assertEquals(h.errors.length, 2);
  assert(h.errors[0] instanceof SyntaxError);
  assertEquals(h.messages.length, 1);
  await h.transport.close();
});

Deno.test("stdio transport: the request id is read from the start of an oversized line when present", () => {
  assertEquals(idFromPrefix('{"jsonrpc":"2.0","id":42,"method":"tools/call","params":'), 42);
  assertEquals(idFromPrefix('{"id":"a\\"b","jsonrpc":"2.0"'), 'a"b');
  assertEquals(idFromPrefix('{"method":"x","jsonrpc":"2.0","id":-3,'), -3);
  assertEquals(idFromPrefix('{"params":{"id":5},"id":1'), null);
  assertEquals(idFromPrefix("garbage"), null);
});
