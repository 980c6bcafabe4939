/**
 * The MCP endpoint's HTTP behaviour, sent as raw requests to the real app: a plain `tools/call`
 * or `tools/list` is answered by the shared SDK `Server` (`request_transport.ts`) exactly as the
 * SDK's stateless JSON transport answers it (status, content type, the caller's own id), and every
 * check of that transport still holds (`Accept`, `Content-Type`, `mcp-protocol-version`, invalid
 * messages, notifications, batches). Two HTTP requests using the same JSON-RPC id at once each get
 * their own answer.
 */
import assert from "node:assert/strict";
import { mcpTestServer } from "./mcp_helpers.ts";

const ACCEPT = "application/json, text/event-stream";

async function post(
  server: Awaited<ReturnType<typeof mcpTestServer>>,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return await server.request("/mcp", {
    method: "POST",
    headers: {
      authorization: `Bearer ${server.key}`,
      "content-type": "application/json",
      accept: ACCEPT,
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

const parseCall = (id: unknown, text: string) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name: "json__parse", arguments: { text } },
});

Deno.test("a plain tools/call and tools/list: 200, JSON, the caller's id, whatever its type", async () => {
  const server = await mcpTestServer();
  try {
    for (const id of [1, "req-7", 0]) {
      const response = await post(server, parseCall(id, `{"n": ${JSON.stringify(id)}}`));
      assert.equal(response.status, 200);
      assert.equal(response.headers.get("content-type"), "application/json");
      const answer = await response.json();
      assert.equal(answer.id, id);
      assert.equal(answer.jsonrpc, "2.0");
      assert.deepEqual(answer.result.structuredContent, { n: id });
    }
    const listed = await post(server, { jsonrpc: "2.0", id: 9, method: "tools/list" }, {
      "mcp-protocol-version": "2025-06-18",
    });
    assert.equal(listed.status, 200);
    const list = await listed.json();
    assert.equal(list.id, 9);
    assert.ok(list.result.tools.some((tool: { name: string }) => tool.name === "json__parse"));
    const unknown = await post(server, {
      jsonrpc: "2.0",
      id: 3,
      method: "tools/call",
      params: { arguments: {} }, // no name: the SDK refuses it
    });
    assert.equal(unknown.status, 200);
    const refused = await unknown.json();
    assert.equal(refused.id, 3);
    assert.equal(refused.error.code, -32603); // as the SDK's own transport answers it
  } finally {
    await server.close();
  }
});

Deno.test("the same JSON-RPC id in concurrent HTTP requests: each gets its own answer", async () => {
  const server = await mcpTestServer();
  try {
    const answers = await Promise.all(
      Array.from({ length: 16 }, async (_, i) => {
        const response = await post(server, parseCall(1, JSON.stringify({ caller: i })));
        return await response.json();
      }),
    );
    answers.forEach((answer, i) => {
      assert.equal(answer.id, 1);
      assert.deepEqual(answer.result.structuredContent, { caller: i });
    });
  } finally {
    await server.close();
  }
});

Deno.test("the SDK transport's checks still hold for tools/call", async () => {
  const server = await mcpTestServer();
  try {
    const call = parseCall(1, "{}");
    const notAcceptable = await post(server, call, { accept: "application/json" });
    // Without text/event-stream the dispatcher takes it for a publication: not an MCP request.
    assert.notEqual(notAcceptable.status, 200);
    await notAcceptable.body?.cancel();
    const jsonOnly = await post(server, call, { accept: "text/event-stream" });
    assert.equal(jsonOnly.status, 406);
    assert.equal((await jsonOnly.json()).error.code, -32000);
    const wrongType = await post(server, call, { "content-type": "text/plain" });
    assert.equal(wrongType.status, 415);
    await wrongType.body?.cancel();
    const version = await post(server, call, { "mcp-protocol-version": "1999-01-01" });
    assert.equal(version.status, 400);
    assert.match((await version.json()).error.message, /Unsupported protocol version/);
    const badId = await post(server, { ...call, id: { not: "an id" } });
    assert.equal(badId.status, 400);
    assert.equal((await badId.json()).error.code, -32700);
    const notification = await post(server, {
      jsonrpc: "2.0",
      method: "notifications/initialized",
    });
    assert.equal(notification.status, 202);
    assert.equal(await notification.text(), "");
    const batch = await post(server, [parseCall(1, "[1]"), parseCall(2, "[2]")]);
    assert.equal(batch.status, 200);
    const both = await batch.json();
    assert.deepEqual(
      both.map((answer: { id: number; result: { structuredContent: unknown } }) => [
        answer.id,
        answer.result.structuredContent,
      ]),
      [[1, { result: [1] }], [2, { result: [2] }]],
    );
  } finally {
    await server.close();
  }
});

Deno.test("a body that is not JSON (or not UTF-8): 400 with a JSON-RPC parse error (-32700, id null); a publication's is an HTTP 400 invalid_json", async () => {
  const server = await mcpTestServer();
  try {
    const bodies: (string | Uint8Array)[] = ["{not json", "", new Uint8Array([0x7b, 0xff, 0x7d])];
    for (const body of bodies) {
      const init = (accept: string): RequestInit => ({
        method: "POST",
        headers: {
          authorization: `Bearer ${server.key}`,
          "content-type": "application/json",
          accept,
        },
        body: body as BodyInit,
      });
      const mcp = await server.request("/mcp", init(ACCEPT));
      assert.equal(mcp.status, 400, String(body));
      assert.match(mcp.headers.get("content-type") ?? "", /^application\/json/);
      const answer = await mcp.json();
      assert.equal(answer.jsonrpc, "2.0");
      assert.equal(answer.id, null);
      assert.equal(answer.error.code, -32700);
      assert.match(answer.error.message, /^Parse error: \S/);
      // Without text/event-stream the same bytes are a publication: HTTP's own 400.
      const publication = await server.request("/mcp", init("application/json"));
      assert.equal(publication.status, 400);
      const refused = await publication.json();
      assert.equal(refused.error, "invalid_json");
      assert.match(refused.message, /^Request body is not valid JSON: \S/);
    }
  } finally {
    await server.close();
  }
});
