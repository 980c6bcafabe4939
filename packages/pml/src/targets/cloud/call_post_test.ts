/**
 * `CloudClient.callTool` posts each call itself (`call_post.ts`) on the session the SDK client
 * opened: against the SDK's own Streamable HTTP server, in its SSE form (progress, then the answer)
 * and its JSON form, with JSON-RPC errors, the call's bound (the server sees the cancellation),
 * and a cloud that redirects (the SDK's path follows it).
 */
import { Server } from "../../sdk/server.ts";
import { WebStandardStreamableHTTPServerTransport } from "../../sdk/http_server.ts";
import {
  CallToolRequestSchema,
  ErrorCode,
  McpError,
  UrlElicitationRequiredError,
} from "../../sdk/types.ts";
import { assert, assertEquals, assertRejects } from "../../testing/assert.ts";
import { isCheckedToolResult } from "../../sdk/tool_result.ts";
import { CloudClient } from "./cloud_client.ts";
import { CallBounds } from "../call_bounds.ts";

const SIGN_IN = {
  mode: "url" as const,
  elicitationId: "e1",
  url: "https://example.com/sign-in",
  message: "Sign in first",
};

function startMcp(opts: { json: boolean }) {
  const transports = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const seen: { byok: string | null; auth: string | null }[] = [];
  const cancelled: string[] = [];
  let cancelledNow: () => void = () => {};
  const wasCancelled = new Promise<void>((r) => (cancelledNow = r));
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const sid = req.headers.get("mcp-session-id");
    let transport = sid ? transports.get(sid) : undefined;
    if (!transport) {
      const t = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        enableJsonResponse: opts.json,
        onsessioninitialized: (id) => void transports.set(id, t),
      });
      const server = new Server({ name: "t", version: "1" }, { capabilities: { tools: {} } });
      server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
        const headers = extra.requestInfo?.headers ?? {};
        const header = (name: string) => (headers[name] as string | undefined) ?? null;
        seen.push({ byok: header("x-pml-byok"), auth: header("authorization") });
        const token = request.params._meta?.progressToken;
        switch (request.params.name) {
          case "fail":
            throw new McpError(ErrorCode.InvalidParams, "no such thing");
          case "sign_in":
            throw new UrlElicitationRequiredError([SIGN_IN]);
          case "hang":
            await new Promise<void>((resolve) =>
              extra.signal.addEventListener("abort", () => resolve())
            );
            cancelled.push(String(extra.signal.reason));
            cancelledNow();
            return { content: [] };
          default:
            if (token !== undefined) {
              for (const progress of [1, 2]) {
                await extra.sendNotification({
                  method: "notifications/progress",
                  params: { progressToken: token, progress, total: 2 },
                });
              }
            }
            return { content: [{ type: "text", text: `ok ${request.params.name}` }] };
        }
      });
      await server.connect(t);
      transport = t;
    }
    return await transport.handleRequest(req);
  });
  return {
    url: `http://127.0.0.1:${http.addr.port}`,
    seen,
    cancelled,
    wasCancelled,
    async [Symbol.asyncDispose]() {
      await http.shutdown();
    },
  };
}

for (const json of [false, true]) {
  const form = json ? "JSON" : "SSE";
  Deno.test(`CloudClient.callTool over a ${form} server: the result, the key, BYOK for that call only, progress`, async () => {
    await using mcp = startMcp({ json });
    const client = new CloudClient({ cloudUrl: mcp.url, apiKey: "k1" });
    try {
      const progress: number[] = [];
      const r = await client.callTool("ns__a", {}, {
        byok: "b64",
        onprogress: (p) => progress.push(p.progress),
      });
      assertEquals(r.content, [{ type: "text", text: "ok ns__a" }]);
      // The SDK's JSON form drops notifications of a call; its SSE form carries them.
      assertEquals(progress, json ? [] : [1, 2]);
      await client.callTool("ns__b", {});
      assertEquals(mcp.seen, [{ byok: "b64", auth: "Bearer k1" }, {
        byok: null,
        auth: "Bearer k1",
      }]);
      const err = await assertRejects(() => client.callTool("fail", {}), McpError) as McpError;
      assertEquals(err.code, ErrorCode.InvalidParams);
      assert(err.message.includes("no such thing"), err.message);
      // -32042 arrives as the SDK's own error type, with its elicitations (as Client.request has it).
      const signIn = await assertRejects(() => client.callTool("sign_in", {}));
      assert(signIn instanceof UrlElicitationRequiredError, String(signIn));
      assertEquals(signIn.elicitations, [SIGN_IN]);
      // The session outlives a tool's error.
      assertEquals((await client.callTool("ns__c", {})).content.length, 1);
    } finally {
      await client.close();
    }
  });
}

Deno.test("CloudClient.callTool past its bound: a timeout error, and the cloud is told to stop", async () => {
  await using mcp = startMcp({ json: false });
  const client = new CloudClient({ cloudUrl: mcp.url, apiKey: "k", callTimeoutMs: 200 });
  try {
    await client.callTool("warm", {});
    const err = await assertRejects(() => client.callTool("hang", {}));
    // The bound that fired (200 ms), not the session's (10 s by default).
    assert(String(err).includes("did not answer within 200 ms"), String(err));
    // The SDK's timeout error, with its data, as the cause.
    const cause = err.cause as McpError;
    assertEquals([cause.code, cause.data], [ErrorCode.RequestTimeout, { timeout: 200 }]);
    await mcp.wasCancelled;
    assertEquals(mcp.cancelled.length, 1);
  } finally {
    await client.close();
  }
});

Deno.test("CloudClient.callTool on a cloud that redirects its endpoint: the SDK's path follows it", async () => {
  await using moved = startMcp({ json: true });
  const front = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) =>
      new URL(req.url).pathname === "/mcp"
        ? new Response(null, { status: 307, headers: { location: "/moved" } })
        : fetch(new URL(new URL(req.url).pathname.replace("/moved", "/mcp"), moved.url), {
          method: req.method,
          headers: req.headers,
          body: req.body,
        }),
  );
  const client = new CloudClient({
    cloudUrl: `http://127.0.0.1:${front.addr.port}`,
    apiKey: "k",
  });
  try {
    assertEquals((await client.callTool("ns__a", {})).content, [{
      type: "text",
      text: "ok ns__a",
    }]);
    assertEquals(moved.seen.length, 1);
  } finally {
    await client.close();
    await front.shutdown();
  }
});

Deno.test("CloudClient.callTool: an answer that holds no response to the call is a clear error, at once", async () => {
  await using mcp = startMcp({ json: true });
  const client = new CloudClient({
    cloudUrl: mcp.url,
    apiKey: "k",
    fetch: async (url, init) =>
      typeof init?.body === "string" && init.body.includes('"tools/call"')
        ? Response.json({ jsonrpc: "2.0", id: "someone else's", result: { content: [] } })
        : await fetch(url, init),
  });
  try {
    const err = await assertRejects(() => client.callTool("ns__a", {}));
    assert(String(err).includes("held no response to it"), String(err));
  } finally {
    await client.close();
  }
});

Deno.test("CloudClient.callTool: a result is checked against the SDK's whole schema once, as it arrives; one that does not conform is passed on unmarked", async () => {
  await using mcp = startMcp({ json: true });
  const odd = { content: [{ type: "text" }], extra: 1 }; // a text block without its text
  const client = new CloudClient({
    cloudUrl: mcp.url,
    apiKey: "k",
    fetch: async (url, init) => {
      const body = typeof init?.body === "string" ? JSON.parse(init.body) : undefined;
      return body?.params?.name === "odd"
        ? Response.json({ jsonrpc: "2.0", id: body.id, result: odd })
        : await fetch(url, init);
    },
  });
  try {
    const conforming = await client.callTool("ns__a", {});
    assert(isCheckedToolResult(conforming));
    const other = await client.callTool("odd", {});
    assertEquals(other, odd);
    assert(!isCheckedToolResult(other));
  } finally {
    await client.close();
  }
});

Deno.test("CallBounds: a bound shorter than those in flight ends first; an ended one never expires", async () => {
  const bounds = new CallBounds();
  const expired: string[] = [];
  const long = bounds.start(60_000, () => expired.push("long"));
  const ended = bounds.start(10, () => expired.push("ended"));
  bounds.end(ended);
  let guard: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    new Promise((r) => bounds.start(50, () => r("short expired"))),
    new Promise((r) => guard = setTimeout(() => r("the 50 ms bound was not kept"), 20_000)),
  ]);
  clearTimeout(guard);
  assertEquals(outcome, "short expired");
  assertEquals(expired, []);
  bounds.end(long);
});
