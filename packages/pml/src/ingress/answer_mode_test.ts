/**
 * `AnswerModeTransport` in process, with the SDK's `Server` behind it: a session keeps nothing per
 * answered call, in either form (the SDK's JSON form kept one entry per call for the session's life).
 */
import { Server } from "../sdk/server.ts";
import { CallToolRequestSchema } from "../sdk/types.ts";
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

Deno.test("AnswerModeTransport: calls answered in JSON and on SSE leave nothing behind in the session", async () => {
  const AnswerModeTransport = await loadAnswerModeTransport();
  const transport = new AnswerModeTransport({ sessionIdGenerator: () => "s1" });
  const server = new Server({ name: "t", version: "1" }, { capabilities: { tools: {} } });
  server.setRequestHandler(CallToolRequestSchema, (request) => ({
    content: [{ type: "text", text: `ok ${request.params.name}` }],
  }));
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
