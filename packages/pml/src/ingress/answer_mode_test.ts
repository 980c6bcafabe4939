/**
 * `AnswerModeTransport` in process, with the SDK's `Server` behind it: a session keeps nothing per
 * answered call, in either form (the SDK's JSON form kept one entry per call for the session's life).
 */
import { Server } from "../sdk/server.ts";
import { CallToolRequestSchema, EmptyResultSchema } from "../sdk/types.ts";
import { assertEquals } from "../testing/assert.ts";
import { answersInJson, loadAnswerModeTransport } from "./answer_mode.ts";

const URL_ = "http://127.0.0.1:1/mcp";

function post(body: unknown, session?: string): Request {
  return new Request(URL_, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(session ? { "mcp-session-id": session, "mcp-protocol-version": "2025-06-18" } : {}),
    },
    body: JSON.stringify(body),
  });
}

/** Connects `server` to `transport` and opens session "s1" (`initialize`, then `initialized`). */
async function initialize(
  server: Server,
  transport: Awaited<ReturnType<typeof loadAnswerModeTransport>>["prototype"],
): Promise<void> {
  await server.connect(transport);
  const init = {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "c", version: "1" },
    },
  };
  await (await transport.handlePost(post(init), init, false)).text();
  const initialized = { jsonrpc: "2.0", method: "notifications/initialized" };
  assertEquals(
    (await transport.handlePost(post(initialized, "s1"), initialized, false)).status,
    202,
  );
}

Deno.test("AnswerModeTransport: calls answered in JSON and on SSE leave nothing behind in the session", async () => {
  const AnswerModeTransport = await loadAnswerModeTransport();
  const transport = new AnswerModeTransport({ sessionIdGenerator: () => "s1" });
  const server = new Server({ name: "t", version: "1" }, { capabilities: { tools: {} } });
  server.setRequestHandler(CallToolRequestSchema, (request) => ({
    content: [{ type: "text", text: `ok ${request.params.name}` }],
  }));
  await initialize(server, transport);

  for (let i = 1; i <= 20; i++) {
    const call = { jsonrpc: "2.0", id: i, method: "tools/call", params: { name: `t${i}` } };
    const json = answersInJson(call, server.getClientCapabilities()) && i % 2 === 0;
    const res = await transport.handlePost(post(call, "s1"), call, json);
    assertEquals(res.headers.get("content-type"), json ? "application/json" : "text/event-stream");
    const text = await res.text();
    assertEquals(text.includes(`"text":"ok t${i}"`), true, text);
  }
  const state = transport as unknown as { _streamMapping: Map<string, unknown> };
  assertEquals(state._streamMapping.size, 0);
  await server.close();
});

/** A session of `AnswerModeTransport` whose `wait` tool runs until it is cancelled. */
async function waitingSession() {
  const AnswerModeTransport = await loadAnswerModeTransport();
  const transport = new AnswerModeTransport({ sessionIdGenerator: () => "s1" });
  const server = new Server({ name: "t", version: "1" }, { capabilities: { tools: {} } });
  let running = 0;
  const errors: string[] = [];
  server.onerror = (err) => errors.push(err.message);
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    if (request.params.name === "wait") {
      running++;
      await new Promise((r) => extra.signal.addEventListener("abort", r));
    }
    if (request.params.name === "asks") {
      // A request to the client on the call's stream, given up when the call is (as a relayed
      // sampling request is when the MCP behind the call cancels it).
      running++;
      const mine = new AbortController();
      extra.signal.addEventListener("abort", () => mine.abort("the call was cancelled"));
      await extra.sendRequest({ method: "ping" }, EmptyResultSchema, { signal: mine.signal })
        .catch(() => {});
    }
    return { content: [{ type: "text", text: `ok ${request.params.name}` }] };
  });
  await initialize(server, transport);
  return {
    transport,
    /** What the server reported through `onerror`. */
    errors,
    /** Resolves once `n` calls of `wait` or `asks` run. */
    async running(n: number) {
      while (running < n) await new Promise((r) => setTimeout(r));
    },
    async cancel(id: number) {
      const cancelled = {
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: id, reason: "stop" },
      };
      assertEquals(
        (await transport.handlePost(post(cancelled, "s1"), cancelled, true)).status,
        202,
      );
    },
    close: () => server.close(),
  };
}

const tool = (id: number, name: string) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name },
});

for (const json of [true, false]) {
  const form = json ? "JSON" : "SSE";
  Deno.test(`AnswerModeTransport: a batch answered in ${form} whose calls are cancelled ends with the others' answers and leaves nothing behind`, async () => {
    const s = await waitingSession();
    // One call answered, one cancelled: the POST ends with the answer, as the SDK writes it.
    const mixed = [tool(1, "wait"), tool(2, "echo")];
    const first = s.transport.handlePost(post(mixed, "s1"), mixed, json);
    await s.running(1);
    const stream = json ? undefined : (await first).text();
    await s.cancel(1);
    const body = stream ? await stream : await (await first).text();
    assertEquals(body.includes(`"text":"ok echo"`), true, body);
    assertEquals(body.includes("ok wait"), false, body);
    assertEquals(s.transport.held, 0);

    // Both cancelled: the POST ends once the second is, with no message.
    const both = [tool(3, "wait"), tool(4, "wait")];
    const second = s.transport.handlePost(post(both, "s1"), both, json);
    await s.running(3);
    await s.cancel(3);
    assertEquals(s.transport.held > 0, true, "the batch's other call still runs");
    await s.cancel(4);
    const ended = await second;
    assertEquals(ended.headers.get("content-type"), "text/event-stream");
    assertEquals(await ended.text(), "");
    assertEquals(s.transport.held, 0);
    await s.close();
  });
}

for (const json of [true, false]) {
  Deno.test(`AnswerModeTransport: a batch that cancels its own call ends with no message (${json ? "JSON" : "SSE"})`, async () => {
    const s = await waitingSession();
    const batch = [tool(7, "wait"), {
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 7, reason: "stop" },
    }];
    const res = await s.transport.handlePost(post(batch, "s1"), batch, json);
    assertEquals(res.headers.get("content-type"), "text/event-stream");
    assertEquals(await res.text(), "");
    assertEquals(s.transport.held, 0);
    await s.close();
  });
}

Deno.test("AnswerModeTransport: the server's own cancellation of a request it sent during a call the client cancelled reaches the client", async () => {
  const s = await waitingSession();
  const listen = new Request(URL_, {
    headers: {
      accept: "text/event-stream",
      "mcp-session-id": "s1",
      "mcp-protocol-version": "2025-06-18",
    },
  });
  const events = (await s.transport.handleRequest(listen)).body!.pipeThrough(
    new TextDecoderStream(),
  ).getReader();
  const call = tool(8, "asks");
  const stream = (await s.transport.handlePost(post(call, "s1"), call, false)).body!
    .pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes('"method":"ping"')) seen += (await stream.read()).value;
  await s.cancel(8);
  // The call's stream ends; the cancellation of the server's ping comes on it or on the GET stream.
  for (let r = await stream.read(); !r.done; r = await stream.read()) seen += r.value;
  while (!seen.includes("notifications/cancelled")) seen += (await events.read()).value;
  assertEquals(seen.includes('"reason":"the call was cancelled"'), true, seen);
  assertEquals(s.errors, []);
  assertEquals(s.transport.held, 0);
  await events.cancel();
  await s.close();
});

Deno.test("AnswerModeTransport: a cancellation of a call already answered, or unknown, changes nothing", async () => {
  const s = await waitingSession();
  const call = tool(5, "echo");
  const res = await s.transport.handlePost(post(call, "s1"), call, true);
  assertEquals(JSON.parse(await res.text()).result.content[0].text, "ok echo");
  await s.cancel(5);
  await s.cancel(99);
  assertEquals(s.transport.held, 0);
  const again = tool(6, "echo");
  const next = await s.transport.handlePost(post(again, "s1"), again, true);
  assertEquals(JSON.parse(await next.text()).result.content[0].text, "ok echo");
  await s.close();
});
