/**
 * End to end: `bin/pml serve` spawned on a free loopback port and driven by the SDK client over
 * Streamable HTTP: same results as `pml stdio`, DNS-rebinding protection, concurrent sessions,
 * clean shutdown on SIGTERM.
 */
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import { ElicitRequestSchema } from "../../packages/pml/src/sdk/types.ts";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { pml } from "../../packages/pml/src/testing/cli.ts";
import { startCloud, startUpstream } from "./_cloud.ts";
import { spawnServe } from "./_serve.ts";
import { askWrite, continueWith } from "./_approvals.ts";
import { childPids, connectStdio, processAlive } from "./_spawn.ts";

const PML_JSON = {
  approvals: "agent",
  permissions: { allow: ["filesystem", "open"], ask: ["filesystem:write_file"], deny: [] },
};

async function connectHttp(url: string, elicit?: () => Promise<"yes" | "no">) {
  const client = new Client(
    { name: "e2e-http", version: "1" },
    { capabilities: elicit ? { elicitation: {} } : {} },
  );
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async () => ({
      action: "accept",
      content: { decision: await elicit() },
    }));
  }
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return Object.assign(client, { [Symbol.asyncDispose]: () => client.close() });
}

Deno.test("e2e serve: the same tool calls through pml stdio and pml serve give the same results", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace(PML_JSON);
  ws.write("src/a.txt", "alpha");
  const env = { PML_CLOUD_URL: cloud.url, PML_API_KEY: cloud.key };
  await using serve = await spawnServe(ws, env);
  await using http = await connectHttp(serve.url);
  await using stdio = await connectStdio(ws, { env });
  const calls = [
    { name: "filesystem__read_file", arguments: { path: "src/a.txt" } },
    { name: "filesystem__list_directory", arguments: { path: "src" } },
    { name: "filesystem__read_file", arguments: { path: "../outside.txt" } },
    { name: "open__echo", arguments: { message: "same" } },
  ];
  const names = (r: { tools: { name: string }[] }) => r.tools.map((t) => t.name).sort();
  assertEquals(names(await http.listTools()), names(await stdio.listTools()));
  for (const call of calls) {
    assertEquals(await http.callTool(call), await stdio.callTool(call), call.name);
  }
});

async function rawRequest(port: number, host: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const body = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" });
  await conn.write(
    new TextEncoder().encode(
      `POST /mcp HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\n` +
        `Accept: application/json, text/event-stream\r\nContent-Length: ${body.length}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    ),
  );
  const out = await new Response(conn.readable).text();
  return out;
}

Deno.test("e2e serve: a foreign Host or Origin is refused (DNS rebinding)", async () => {
  await using ws = tempWorkspace(PML_JSON);
  await using serve = await spawnServe(ws);
  const port = Number(new URL(serve.url).port);
  assertStringIncludes(await rawRequest(port, `evil.example:${port}`), "403 Forbidden");
  assertStringIncludes(await rawRequest(port, `127.0.0.1:${port + 1}`), "403 Forbidden");
  const res = await fetch(serve.url, {
    method: "POST",
    headers: {
      origin: "http://evil.example",
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "x", version: "1" },
      },
    }),
  });
  assertEquals(res.status, 403);
  assertStringIncludes(await res.text(), "Origin");
  // The legitimate client still gets in.
  await using ok = await connectHttp(serve.url.replace("127.0.0.1", "localhost"));
  assert((await ok.listTools()).tools.length > 0);
});

/** A raw Streamable HTTP session on `url`: the answers' form is what the test looks at. */
async function rawSession(url: string, capabilities: Record<string, unknown>) {
  const headers: Record<string, string> = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  };
  const post = async (message: Record<string, unknown>) => {
    const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(message) });
    return { type: res.headers.get("content-type") ?? "", text: await res.text(), res };
  };
  const init = await post({
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities,
      clientInfo: { name: "raw", version: "1" },
    },
  });
  headers["mcp-session-id"] = init.res.headers.get("mcp-session-id")!;
  headers["mcp-protocol-version"] = "2025-06-18";
  assertEquals(
    (await post({ jsonrpc: "2.0", method: "notifications/initialized" })).res.status,
    202,
  );
  return Object.assign(post, { headers });
}

Deno.test("e2e serve: a call is answered in plain JSON when nothing else can go back on it, on an SSE stream when the client can be asked or wants progress", async () => {
  await using ws = tempWorkspace(PML_JSON);
  ws.write("r.txt", "R");
  await using serve = await spawnServe(ws);
  const read = (id: number, meta?: Record<string, unknown>) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: {
      name: "filesystem__read_file",
      arguments: { path: "r.txt" },
      ...(meta ? { _meta: meta } : {}),
    },
  });

  const quiet = await rawSession(serve.url, {});
  const plain = await quiet(read(1));
  assertEquals(plain.type, "application/json");
  const answer = JSON.parse(plain.text);
  assertEquals(answer.id, 1);
  assertEquals(answer.result.content[0].text, "R");
  const withProgress = await quiet(read(2, { progressToken: "p" }));
  assertEquals(withProgress.type, "text/event-stream");
  assertStringIncludes(withProgress.text, '"id":2');
  // Both forms at once in one session: each answer goes back in its own.
  const mixed = await Promise.all(
    Array.from(
      { length: 8 },
      (_, i) => quiet(read(10 + i, i % 2 ? { progressToken: i } : undefined)),
    ),
  );
  for (const [i, r] of mixed.entries()) {
    assertEquals(r.type, i % 2 ? "text/event-stream" : "application/json");
    assertStringIncludes(r.text, `"id":${10 + i}`);
    assertStringIncludes(r.text, '"text":"R"');
  }
  // A batch of two in one POST: one JSON array.
  const both = await quiet([read(3), read(4)] as unknown as Record<string, unknown>);
  assertEquals(JSON.parse(both.text).map((m: { id: number }) => m.id).sort(), [3, 4]);
  // Bad input still gets the SDK's refusals, and a body past 4 MiB a 413, declared or streamed.
  assertEquals((await quiet({ jsonrpc: "2.0", id: 5 })).res.status, 400);
  const big = { ...read(6), params: { name: "x", arguments: { pad: "x".repeat(5 << 20) } } };
  assertEquals((await quiet(big)).res.status, 413);
  const bytes = new TextEncoder().encode(JSON.stringify(big));
  const streamed = await fetch(serve.url, {
    method: "POST",
    headers: quiet.headers,
    body: new ReadableStream({
      start(c) {
        for (let i = 0; i < bytes.length; i += 1 << 16) c.enqueue(bytes.subarray(i, i + (1 << 16)));
        c.close();
      },
    }),
  });
  assertEquals(streamed.status, 413);
  await streamed.body?.cancel();

  for (const capabilities of [{ elicitation: {} }, { sampling: {} }]) {
    const askable = await rawSession(serve.url, capabilities);
    const streamed = await askable(read(1));
    assertEquals(streamed.type, "text/event-stream", JSON.stringify(capabilities));
    assertStringIncludes(streamed.text, '"text":"R"');
  }
});

Deno.test("e2e serve: sessions run concurrently (one waits on the human while another completes); SIGTERM closes the sandboxes", async () => {
  await using ws = tempWorkspace(PML_JSON);
  ws.write("r.txt", "R");
  await using serve = await spawnServe(ws);
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let asked!: () => void;
  const askedP = new Promise<void>((r) => (asked = r));
  await using a = await connectHttp(serve.url, async () => {
    asked();
    await released;
    return "yes";
  });
  await using b = await connectHttp(serve.url);
  const pending = a.callTool({
    name: "filesystem__write_file",
    arguments: { path: "w.txt", content: "W" },
  });
  await askedP;
  // Session A is parked inside its call; session B is served meanwhile.
  const reads = await Promise.all(
    Array.from(
      { length: 8 },
      () => b.callTool({ name: "filesystem__read_file", arguments: { path: "r.txt" } }),
    ),
  );
  for (const r of reads) assertEquals((r.content as { text: string }[])[0].text, "R");
  release();
  const written = await pending;
  assert(!written.isError);
  assertEquals(ws.read("w.txt"), "W");

  const sandboxes = childPids(serve.child.pid);
  assert(sandboxes.length > 0, "the warm sandbox runs under pml serve");
  serve.child.kill("SIGTERM");
  const status = await serve.child.status;
  assertEquals(status.code, 0);
  for (const pid of sandboxes) assert(!processAlive(pid), `sandbox ${pid} still alive`);
});

Deno.test("e2e serve and stdio agree: the agent's approval is answered from the next one-shot client (another MCP session, another pml process), once", async () => {
  await using ws = tempWorkspace(PML_JSON);

  // HTTP: one client session asks and goes away; the next one continues with the workflow id.
  {
    await using serve = await spawnServe(ws);
    let id: string;
    {
      await using a = await connectHttp(serve.url);
      id = await askWrite(a, "http.txt");
    }
    await using b = await connectHttp(serve.url);
    const done = await continueWith(b, id);
    assert(!done.isError, JSON.stringify(done));
    assertEquals(ws.read("http.txt"), "http.txt");
    const again = await continueWith(b, id);
    assert(again.isError, "answered once");
    assertStringIncludes((again.content as { text: string }[])[0].text, "No pending approval");
  }
  // stdio: one pml asks and ends; the next pml continues.
  let id: string;
  {
    await using first = await connectStdio(ws);
    id = await askWrite(first, "stdio.txt");
  }
  await using second = await connectStdio(ws);
  const done = await continueWith(second, id);
  assert(!done.isError, JSON.stringify(done));
  assertEquals(ws.read("stdio.txt"), "stdio.txt");
  assert((await continueWith(second, id)).isError, "answered once");
});

Deno.test("e2e serve and stdio agree: a call a human approved is continued from another MCP session (HTTP) or another pml process (stdio), once", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
  });
  const approve = async (id: string) => {
    const out = await pml(ws, "approve", id);
    assertEquals(out.code, 0, out.stderr);
  };

  // HTTP: session A asks, the human approves, session B (a client that reconnected) continues.
  {
    await using serve = await spawnServe(ws);
    let id: string;
    {
      await using a = await connectHttp(serve.url);
      id = await askWrite(a, "http.txt");
    }
    await approve(id);
    await using b = await connectHttp(serve.url);
    const done = await continueWith(b, id);
    assert(!done.isError, JSON.stringify(done));
    assertEquals(ws.read("http.txt"), "http.txt");
    assert((await continueWith(b, id)).isError, "answered once");
  }
  // stdio: one pml asks, the human approves, the next pml continues.
  let id: string;
  {
    await using first = await connectStdio(ws);
    id = await askWrite(first, "stdio.txt");
  }
  await approve(id);
  await using second = await connectStdio(ws);
  const done = await continueWith(second, id);
  assert(!done.isError, JSON.stringify(done));
  assertEquals(ws.read("stdio.txt"), "stdio.txt");
  assert((await continueWith(second, id)).isError, "answered once");
});
