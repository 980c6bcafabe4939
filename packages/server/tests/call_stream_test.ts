/**
 * `CallStream` and `ServerRequests` (src/mcp/call_stream.ts): what a proxied call's server sends
 * before its result, as the caller's HTTP response carries it; and the bounds of the streams of
 * what it sends outside a request (`UpstreamSessions.listen`).
 */
import { assert, assertEquals, assertRejects } from "../../pml/src/testing/assert.ts";
import {
  CallStream,
  MAX_NOTIFICATIONS,
  MAX_OPEN_REQUESTS,
  ServerRequests,
} from "../src/mcp/call_stream.ts";
import type { JSONRPCMessage } from "../src/mcp/sdk/types.ts";
import {
  MAX_LISTENERS,
  MAX_STREAMS_PER_OWNER,
  UpstreamSessions,
} from "../src/mcp/upstream_sessions.ts";
import { startCountingUpstream } from "./upstream.ts";

const KEY = "sk-call-stream-secret";
const ANSWER = { jsonrpc: "2.0", id: 7, result: { content: [] } } as JSONRPCMessage;

function streamOf(requests = new ServerRequests(), owner = "key-a") {
  return new CallStream({
    keys: new Map([["TOKEN", KEY]]),
    owner,
    requests,
    progressToken: "caller-token",
  });
}

/** The JSON-RPC messages of an SSE body, in order. */
async function events(response: Response): Promise<Record<string, unknown>[]> {
  const text = await response.text();
  return text.split("\n\n").filter((e) => e.includes("data: ")).map((e) =>
    JSON.parse(e.slice(e.indexOf("data: ") + 6))
  );
}

/** An upstream session's transport that records what it is sent. */
function upstream() {
  const sent: JSONRPCMessage[] = [];
  return { sent, send: (m: JSONRPCMessage) => Promise.resolve(void sent.push(m)) };
}

Deno.test("CallStream: nothing before the result is a plain JSON answer", async () => {
  const response = await streamOf().respond(Promise.resolve(ANSWER));
  assertEquals(response.headers.get("content-type"), "application/json");
  assertEquals(await response.json(), ANSWER);
});

Deno.test("CallStream: what comes first turns the answer into an SSE stream, in order, scrubbed, progress under the caller's token", async () => {
  const stream = streamOf();
  let answer!: (m: JSONRPCMessage) => void;
  const responding = stream.respond(new Promise((r) => answer = r));
  stream.progress({ progress: 1, total: 2, message: `with ${KEY}` });
  const up = upstream();
  stream.fromUpstream({
    jsonrpc: "2.0",
    method: "notifications/message",
    params: { level: "info", data: `log ${KEY}` },
  }, up);
  // Progress of another token is not the caller's.
  stream.fromUpstream({
    jsonrpc: "2.0",
    method: "notifications/progress",
    params: { progressToken: "other", progress: 1 },
  }, up);
  const response = await responding;
  assertEquals(response.headers.get("content-type"), "text/event-stream");
  answer(ANSWER);
  const got = await events(response);
  assertEquals(got, [
    {
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progress: 1, total: 2, message: "with [redacted]", progressToken: "caller-token" },
    },
    {
      jsonrpc: "2.0",
      method: "notifications/message",
      params: { level: "info", data: "log [redacted]" },
    },
    ANSWER,
  ]);
});

Deno.test("ServerRequests: a server's request goes out under an id of its own, answered only by its caller's key, back under the server's id; its cancellation is passed on", async () => {
  const requests = new ServerRequests();
  const stream = streamOf(requests, "key-a");
  let answer!: (m: JSONRPCMessage) => void;
  const responding = stream.respond(new Promise((r) => answer = r));
  const up = upstream();
  stream.fromUpstream({
    jsonrpc: "2.0",
    id: 0,
    method: "elicitation/create",
    params: { message: "?", requestedSchema: { type: "object", properties: {} } },
  }, up);
  stream.fromUpstream({ jsonrpc: "2.0", id: 1, method: "sampling/createMessage", params: {} }, up);
  stream.fromUpstream({
    jsonrpc: "2.0",
    method: "notifications/cancelled",
    params: { requestId: 1, reason: "no longer" },
  }, up);
  const response = await responding;
  answer(ANSWER);
  const [asked, sampled, cancelled] = await events(response);
  const id = asked.id as string;
  assert(id.startsWith("pml-server-") && id !== sampled.id, JSON.stringify([asked, sampled]));
  assertEquals(cancelled.params, { requestId: sampled.id, reason: "no longer" });
  // The call ended with its answer: nobody's answer is taken any more.
  assertEquals(requests.answer("key-a", { jsonrpc: "2.0", id, result: {} }), false);
  assertEquals(up.sent, []);

  // While a call runs: another key cannot answer; its own can, once.
  const live = streamOf(requests, "key-a");
  const running = live.respond(new Promise(() => {}));
  live.fromUpstream({ jsonrpc: "2.0", id: 5, method: "elicitation/create", params: {} }, up);
  const reader = (await running).body!.getReader();
  const chunk = new TextDecoder().decode((await reader.read()).value);
  const question = JSON.parse(chunk.slice(chunk.indexOf("data: ") + 6));
  const reply = { jsonrpc: "2.0", id: question.id, result: { action: "decline" } };
  assertEquals(requests.answer("key-b", reply), false);
  assertEquals(up.sent, []);
  assertEquals(requests.answer("key-a", reply), true);
  assertEquals(up.sent, [{ jsonrpc: "2.0", id: 5, result: { action: "decline" } }]);
  assertEquals(requests.answer("key-a", reply), false, "answered once");
  // The caller went away: the server's next request is refused, nothing waits for an answer.
  await reader.cancel();
  live.fromUpstream({ jsonrpc: "2.0", id: 6, method: "elicitation/create", params: {} }, up);
  assertEquals((up.sent[1] as { id: unknown; error?: unknown }).id, 6);
  assert("error" in up.sent[1]);
});

Deno.test("CallStream: a flood is bounded: notifications past the bound dropped, requests past the bound refused to the server", async () => {
  const stream = streamOf();
  let answer!: (m: JSONRPCMessage) => void;
  const responding = stream.respond(new Promise((r) => answer = r));
  const up = upstream();
  const response = await (async () => {
    stream.fromUpstream({ jsonrpc: "2.0", method: "notifications/message", params: {} }, up);
    return await responding;
  })();
  // Read as it comes, so that the queue bound is not what drops them.
  const reading = events(response);
  for (let i = 0; i < MAX_NOTIFICATIONS + 50; i++) {
    stream.fromUpstream({ jsonrpc: "2.0", method: "notifications/message", params: { i } }, up);
    if (i % 100 === 0) await new Promise((r) => setTimeout(r, 0));
  }
  for (let i = 0; i < MAX_OPEN_REQUESTS + 2; i++) {
    stream.fromUpstream({ jsonrpc: "2.0", id: 100 + i, method: "ping", params: {} }, up);
  }
  answer(ANSWER);
  const got = await reading;
  const notes = got.filter((m) => m.method === "notifications/message");
  assertEquals(notes.length, MAX_NOTIFICATIONS);
  assertEquals(got.filter((m) => m.method === "ping").length, MAX_OPEN_REQUESTS);
  assertEquals(up.sent.map((m) => (m as { id: unknown }).id), [
    100 + MAX_OPEN_REQUESTS,
    101 + MAX_OPEN_REQUESTS,
  ]);
});

Deno.test("UpstreamSessions.listen: at most 8 streams a session and 32 a caller, each holding its session open; another caller still listens", async () => {
  const upstream = startCountingUpstream();
  const sessions = new UpstreamSessions({ timeoutMs: 5000 });
  const listener = () => ({ send: () => {}, close: () => {} });
  const target = (key: string, owner: string) => ({
    url: upstream.url,
    headers: { authorization: `Bearer ${key}` },
    owner,
  });
  try {
    const stops: (() => void)[] = [];
    for (const key of ["k1", "k2", "k3", "k4"]) {
      for (let i = 0; i < MAX_LISTENERS; i++) {
        stops.push(await sessions.listen(target(key, "owner-a"), listener()));
      }
    }
    assertEquals(stops.length, MAX_STREAMS_PER_OWNER);
    const perSession = await sessions.listen(target("k1", "owner-b"), listener());
    for (let i = 1; i < MAX_LISTENERS; i++) {
      await sessions.listen(target("k1", "owner-b"), listener());
    }
    await assertRejects(() => sessions.listen(target("k1", "owner-b"), listener()), RangeError);
    await assertRejects(() => sessions.listen(target("k5", "owner-a"), listener()), RangeError);
    // One stream stopped: its caller may open another.
    stops.pop()!();
    stops.push(await sessions.listen(target("k5", "owner-a"), listener()));
    perSession();
    assertEquals(sessions.size, 6);
  } finally {
    await sessions.close();
    await upstream.close();
  }
});
