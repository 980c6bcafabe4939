/**
 * {@link TransportCalls.request}: a `resources/read` or `prompts/get` sent on the transport by PML
 * itself, its answer checked with the SDK's schema as `Client.request` checks it, over a linked
 * pair of the SDK's in-memory transports (the other end plays the server, message by message).
 */
import { assert, assertEquals, assertRejects } from "../../testing/assert.ts";
import { InMemoryTransport } from "../../sdk/in_memory.ts";
import {
  ErrorCode,
  GetPromptResultSchema,
  type JSONRPCMessage,
  McpError,
  ReadResourceResultSchema,
} from "../../sdk/types.ts";
import { TransportCalls } from "./transport_calls.ts";

/** A server that answers each request with `answer(request)` (nothing when it returns undefined). */
async function serverAnswering(
  answer: (request: { id: number; method: string; params: unknown }) => unknown,
) {
  const [mine, theirs] = InMemoryTransport.createLinkedPair();
  const seen: JSONRPCMessage[] = [];
  theirs.onmessage = (message) => {
    seen.push(message);
    const m = message as { id?: number; method: string; params: unknown };
    if (m.id === undefined) return;
    const reply = answer(m as { id: number; method: string; params: unknown });
    if (reply !== undefined) {
      void theirs.send({ jsonrpc: "2.0", id: m.id, ...reply } as JSONRPCMessage);
    }
  };
  await theirs.start();
  await mine.start();
  return { calls: new TransportCalls(mine), seen };
}

Deno.test("TransportCalls.request: a resources/read and a prompts/get on the wire, answers checked by the SDK's schemas", async () => {
  const { calls, seen } = await serverAnswering(({ method, params }) =>
    method === "resources/read"
      ? { result: { contents: [{ uri: (params as { uri: string }).uri, text: "hello" }] } }
      : { result: { messages: [{ role: "user", content: { type: "text", text: "hi Lyon" } }] } }
  );
  const read = await calls.request(
    "resources/read",
    { uri: "demo://resource/1" },
    ReadResourceResultSchema,
    { timeoutMs: 10_000 },
  );
  assertEquals(read.contents, [{ uri: "demo://resource/1", text: "hello" }]);
  const prompt = await calls.request(
    "prompts/get",
    { name: "args-prompt", arguments: { city: "Lyon" } },
    GetPromptResultSchema,
    { timeoutMs: 10_000 },
  );
  assertEquals(prompt.messages[0].content, { type: "text", text: "hi Lyon" });
  const sent = seen as { id: number; method: string; params: unknown }[];
  assertEquals(sent.map((m) => [m.method, m.params]), [
    ["resources/read", { uri: "demo://resource/1" }],
    ["prompts/get", { name: "args-prompt", arguments: { city: "Lyon" } }],
  ]);
  assert(sent[0].id !== sent[1].id, "one id per request");
});

Deno.test("TransportCalls.request: an answer that is no such result is refused, a JSON-RPC error thrown as the SDK's McpError", async () => {
  const { calls } = await serverAnswering(({ method }) =>
    method === "resources/read"
      ? { result: { contents: "not a list" } }
      : { error: { code: ErrorCode.InvalidParams, message: "Unknown prompt" } }
  );
  await assertRejects(() =>
    calls.request("resources/read", { uri: "demo://x" }, ReadResourceResultSchema, {
      timeoutMs: 10_000,
    })
  );
  const err = await assertRejects(
    () =>
      calls.request("prompts/get", { name: "nope" }, GetPromptResultSchema, { timeoutMs: 10_000 }),
    McpError,
  );
  assertEquals((err as McpError).code, ErrorCode.InvalidParams);
});

Deno.test("TransportCalls.request: a server that never answers: cancelled on the wire after its bound, or when the caller aborts", async () => {
  const { calls, seen } = await serverAnswering(() => undefined);
  // The bounds' timer does not hold a process open (call_bounds.ts): this test's does.
  const alive = setInterval(() => {}, 1_000);
  try {
    const timedOut = await assertRejects(
      () =>
        calls.request("resources/read", { uri: "demo://x" }, ReadResourceResultSchema, {
          timeoutMs: 5,
        }),
      McpError,
    );
    assertEquals((timedOut as McpError).code, ErrorCode.RequestTimeout);
    const aborted = new AbortController();
    const pending = calls.request("prompts/get", { name: "p" }, GetPromptResultSchema, {
      timeoutMs: 10_000,
      signal: aborted.signal,
    });
    aborted.abort("the client cancelled");
    await assertRejects(() => pending, McpError);
    const cancelled = seen.filter((m) => "method" in m && m.method === "notifications/cancelled");
    assertEquals(cancelled.length, 2);
  } finally {
    clearInterval(alive);
  }
});

Deno.test("TransportCalls: a call whose signal is aborted before it is sent rejects as an abort in flight (an McpError) and sends nothing", async () => {
  const { calls, seen } = await serverAnswering(() => ({ result: { content: [] } }));
  const aborted = new AbortController();
  aborted.abort("the agent cancelled");
  const call = await assertRejects(
    () =>
      calls.call({ name: "echo", arguments: {} }, { timeoutMs: 10_000, signal: aborted.signal }),
    McpError,
  );
  assert(String((call as McpError).message).includes("the agent cancelled"), String(call));
  await assertRejects(
    () =>
      calls.request("resources/read", { uri: "demo://x" }, ReadResourceResultSchema, {
        timeoutMs: 10_000,
        signal: aborted.signal,
      }),
    McpError,
  );
  assertEquals(seen.length, 0);
});
