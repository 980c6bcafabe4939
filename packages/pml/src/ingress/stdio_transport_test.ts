import { PassThrough } from "node:stream";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../testing/assert.ts";
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

Deno.test("stdio transport: characters cut between chunks arrive whole; a line starting with a BOM is not JSON", async () => {
  const h = harness(1000);
  await h.transport.start();
  const message = { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "é€😀\u2028" } };
  const bytes = new TextEncoder().encode(JSON.stringify(message) + "\n");
  for (let i = 0; i < bytes.length; i++) h.stdin.write(bytes.subarray(i, i + 1));
  h.stdin.write("\uFEFF" + JSON.stringify({ jsonrpc: "2.0", id: 5, method: "ping" }) + "\n");
  await flush();
  assertEquals(h.messages, [message]);
  assertEquals(h.errors.length, 1);
  assert(h.errors[0] instanceof SyntaxError, "the BOM stays part of the line, as it came");
  await h.transport.close();
});

Deno.test("stdio transport: the request id is read from the start of an oversized line when present", () => {
  assertEquals(idFromPrefix('{"jsonrpc":"2.0","id":42,"method":"tools/call","params":'), 42);
  assertEquals(idFromPrefix('{"id":"a\\"b","jsonrpc":"2.0"'), 'a"b');
  assertEquals(idFromPrefix('{"method":"x","jsonrpc":"2.0","id":-3,'), -3);
  assertEquals(idFromPrefix('{"params":{"id":5},"id":1'), null);
  assertEquals(idFromPrefix("garbage"), null);
});

/** The process's stdio as the raw mode sees it: reads from a queue (null: EOF), short writes. */
function rawHarness(chunks: (string | null)[], maxWrite = 7) {
  const enc = new TextEncoder();
  const written: number[] = [];
  let writes = 0;
  const queue = [...chunks];
  const raw = {
    read: async (buf: Uint8Array) => {
      await flush();
      const next = queue.shift();
      if (next === undefined || next === null) return null;
      const bytes = enc.encode(next);
      buf.set(bytes);
      return bytes.length;
    },
    // Short writes: the transport must finish each message itself.
    writeSync: (bytes: Uint8Array) => {
      writes++;
      const n = Math.min(maxWrite, bytes.length);
      written.push(...bytes.subarray(0, n));
      return n;
    },
  };
  const transport = new LineStdioTransport(undefined, undefined, 1024, () => {}, raw);
  const messages: unknown[] = [];
  let closed = 0;
  let readCount = 0;
  transport.onmessage = (m) => messages.push(m);
  transport.onclose = () => closed++;
  transport.onread = () => readCount++;
  return {
    transport,
    messages,
    closed: () => closed,
    reads: () => readCount,
    writes: () => writes,
    output: () => new TextDecoder().decode(new Uint8Array(written)),
  };
}

Deno.test("stdio transport (raw): lines across reads are served, short writes completed, EOF closes", async () => {
  const a = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
  const b = JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" });
  const h = rawHarness([a.slice(0, 9), a.slice(9) + "\n" + b, "\n", null]);
  await h.transport.start();
  for (let i = 0; i < 20 && h.closed() === 0; i++) await flush();
  assertEquals(h.messages, [JSON.parse(a), JSON.parse(b)]);
  assertEquals(h.reads(), 3);
  assertEquals(h.closed(), 1, "the end of stdin closes the transport once");
  const reply = { jsonrpc: "2.0" as const, id: 1, result: { text: "é".repeat(10) } };
  await h.transport.send(reply);
  await h.transport.send({ jsonrpc: "2.0", id: 2, result: {} });
  assertEquals(
    h.output(),
    JSON.stringify(reply) + "\n" + JSON.stringify({ jsonrpc: "2.0", id: 2, result: {} }) + "\n",
  );
});

Deno.test("stdio transport (raw): answers sent in one turn go out in one write, in order", async () => {
  const h = rawHarness([null], 1 << 20);
  const replies = [1, 2, 3].map((id) => ({ jsonrpc: "2.0" as const, id, result: { n: id } }));
  // As the answers of one chunk of a dependency's output reach the transport: in one turn.
  await Promise.all(replies.map((r) => h.transport.send(r)));
  assertEquals(h.writes(), 1);
  await h.transport.send({ jsonrpc: "2.0", id: 4, result: {} });
  assertEquals(h.writes(), 2, "a later answer is not held back");
  assertEquals(
    h.output(),
    [...replies, { jsonrpc: "2.0", id: 4, result: {} }].map((r) => JSON.stringify(r) + "\n")
      .join(""),
  );
});

Deno.test("stdio transport (raw): a failing write rejects the send, the transport keeps reading", async () => {
  const h = rawHarness([JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) + "\n", null]);
  const failing = new LineStdioTransport(undefined, undefined, 1024, () => {}, {
    read: () => Promise.resolve(null),
    writeSync: () => {
      throw new Deno.errors.BrokenPipe("the client went away");
    },
  });
  await assertRejects(
    () => failing.send({ jsonrpc: "2.0", id: 1, result: {} }),
    Deno.errors.BrokenPipe,
  );
  await h.transport.start();
  for (let i = 0; i < 20 && h.closed() === 0; i++) await flush();
  assertEquals(h.messages.length, 1);
});

Deno.test("stdio transport: the end of stdin closes the transport once", async () => {
  const h = harness(1024);
  let closed = 0;
  h.transport.onclose = () => closed++;
  await h.transport.start();
  h.stdin.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }) + "\n");
  for (let i = 0; i < 20 && closed === 0; i++) await flush();
  assertEquals(h.messages.length, 1);
  assertEquals(closed, 1);
});
