/**
 * `AnswerModeTransport`'s plain POSTs (one request on an open session, answered in JSON) against
 * the SDK's own transport in JSON mode, in process, each with the same SDK `Server` handlers: every
 * POST below gets the same status, content type and body from both, the refusals included, and
 * only the plain ones go past the SDK's POST handling. Cancellation reaches the handler the same way.
 */
import { Server } from "../sdk/server.ts";
import { RequestFirstServer } from "../sdk/incoming.ts";
import { loadHttpServer } from "../sdk/load_http_server.ts";
import { CallToolRequestSchema, ListToolsRequestSchema } from "../sdk/types.ts";
import { assert, assertEquals } from "../testing/assert.ts";
import { loadAnswerModeTransport } from "./answer_mode.ts";

const HOST = "127.0.0.1:1";
const URL_ = `http://${HOST}/mcp`;
const VERSION = "2025-06-18";

type Headers_ = Record<string, string>;

function post(body: unknown, session: string | undefined, headers: Headers_ = {}): Request {
  return new Request(URL_, {
    method: "POST",
    headers: {
      host: HOST,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(session ? { "mcp-session-id": session, "mcp-protocol-version": VERSION } : {}),
      ...headers,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

const call = (id: unknown, name: string, extra: Record<string, unknown> = {}) => ({
  jsonrpc: "2.0",
  id,
  method: "tools/call",
  params: { name, arguments: {} },
  ...extra,
});

/**
 * A server with the tools the cases call; `waiting` sees each `wait` call's signal, `errors` what
 * the transport and the server report.
 */
function makeServer(kind: "sdk" | "pml", waiting: AbortSignal[], errors: string[]): Server {
  const Kind = kind === "sdk" ? Server : RequestFirstServer;
  const server = new Kind({ name: "t", version: "1" }, {
    capabilities: { tools: {}, logging: {} },
  });
  server.onerror = (err) => errors.push(err.message);
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const name = request.params.name;
    if (name === "fail") throw Object.assign(new Error("it failed"), { code: -32000 });
    if (name === "bad") return { content: "not a list" } as never;
    if (name === "notify") {
      await extra.sendNotification({
        method: "notifications/message",
        params: { level: "info", data: "on the way" },
      });
    }
    if (name === "wait") {
      waiting.push(extra.signal);
      await new Promise((r) => extra.signal.addEventListener("abort", r));
    }
    return { content: [{ type: "text", text: `ok ${name}` }], structuredContent: { name } };
  });
  return server;
}

/** An open session on `handle`: initialize and `notifications/initialized` sent. */
async function open(handle: (r: Request, body: unknown) => Promise<Response>): Promise<string> {
  const init = {
    jsonrpc: "2.0",
    id: 0,
    method: "initialize",
    params: { protocolVersion: VERSION, capabilities: {}, clientInfo: { name: "c", version: "1" } },
  };
  const res = await handle(post(init, undefined), init);
  await res.text();
  const session = res.headers.get("mcp-session-id")!;
  const initialized = { jsonrpc: "2.0", method: "notifications/initialized" };
  assertEquals((await handle(post(initialized, session), initialized)).status, 202);
  return session;
}

/** Both sides: the SDK's transport in JSON mode, and PML's, each with a server of `kind`. */
async function sides(kind: "sdk" | "pml") {
  const sdk = await loadHttpServer();
  const AnswerModeTransport = await loadAnswerModeTransport();
  const options = {
    sessionIdGenerator: () => "s-1",
    enableDnsRebindingProtection: true,
    allowedHosts: [HOST],
    allowedOrigins: [`http://${HOST}`],
  };
  const waiting = { sdk: [] as AbortSignal[], pml: [] as AbortSignal[] };
  const errors = { sdk: [] as string[], pml: [] as string[] };
  const theirs = new sdk.WebStandardStreamableHTTPServerTransport({
    ...options,
    enableJsonResponse: true,
  });
  const ours = new AnswerModeTransport(options);
  let pastSdk = 0;
  const sdkPost = Object.getPrototypeOf(Object.getPrototypeOf(ours)).handlePostRequest;
  (ours as unknown as { handlePostRequest: unknown }).handlePostRequest = function (
    this: unknown,
    ...args: unknown[]
  ) {
    pastSdk++;
    return sdkPost.apply(this, args);
  };
  const servers = [
    makeServer(kind, waiting.sdk, errors.sdk),
    makeServer(kind, waiting.pml, errors.pml),
  ];
  await servers[0].connect(theirs);
  await servers[1].connect(ours);
  const handleTheirs = (r: Request, body: unknown) => theirs.handleRequest(r, { parsedBody: body });
  const handleOurs = (r: Request, body: unknown) => ours.handlePost(r, body, true);
  const sessions = [await open(handleTheirs), await open(handleOurs)];
  return {
    waiting,
    errors,
    /** POSTs through the SDK's POST handling on PML's side so far. */
    sdkPosts: () => pastSdk,
    /** Requests each side holds a way back for (the SDK's: those mapped to a POST). */
    held: () => ({
      sdk: (theirs as unknown as { _requestToStreamMapping: Map<unknown, unknown> })
        ._requestToStreamMapping.size,
      pml: ours.held,
    }),
    /** The same POST to each side, not awaited. */
    each(body: unknown): [Promise<Response>, Promise<Response>] {
      return [
        handleTheirs(post(body, sessions[0]), body),
        handleOurs(post(body, sessions[1]), body),
      ];
    },
    async both(body: unknown, headers: Headers_ = {}, session?: string) {
      const [a, b] = await Promise.all([
        handleTheirs(post(body, session ?? sessions[0], headers), body),
        handleOurs(post(body, session ?? sessions[1], headers), body),
      ]);
      const read = async (r: Response) => ({
        status: r.status,
        type: r.headers.get("content-type"),
        session: r.headers.get("mcp-session-id"),
        body: await r.text(),
      });
      return [await read(a), await read(b)];
    },
    async close() {
      for (const s of servers) await s.close();
    },
  };
}

const CASES: { what: string; body: unknown; headers?: Headers_; session?: string }[] = [
  { what: "numeric id", body: call(7, "echo") },
  { what: "string id", body: call("a-1", "echo") },
  { what: "id 0", body: call(0, "echo") },
  { what: "a handler error", body: call(8, "fail") },
  { what: "a result the server refuses", body: call(9, "bad") },
  { what: "a related notification first", body: call(10, "notify") },
  { what: "params without a name", body: { jsonrpc: "2.0", id: 11, method: "tools/call" } },
  { what: "an unknown method", body: { jsonrpc: "2.0", id: 12, method: "nope/nope" } },
  { what: "tools/list", body: { jsonrpc: "2.0", id: 13, method: "tools/list" } },
  { what: "_meta", body: call(14, "echo", { params: { name: "echo", _meta: { x: 1 } } }) },
  { what: "an extra top-level key", body: call(15, "echo", { extra: true }) },
  {
    what: "a prototype key",
    body:
      `{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":"echo"},"__proto__":{"x":1}}`,
  },
  { what: "a float id", body: call(1.5, "echo") },
  { what: "a null id", body: call(null, "echo") },
  { what: "an object id", body: call({ a: 1 }, "echo") },
  { what: "jsonrpc 1.0", body: { ...call(17, "echo"), jsonrpc: "1.0" } },
  { what: "a method that is a number", body: { jsonrpc: "2.0", id: 18, method: 5 } },
  { what: "an array", body: [call(19, "echo"), call(20, "echo")] },
  { what: "an empty array", body: [] },
  {
    what: "a notification",
    body: {
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { progressToken: 1, progress: 1 },
    },
  },
  { what: "a response", body: { jsonrpc: "2.0", id: 21, result: {} } },
  { what: "a string", body: '"tools/call"' },
  {
    what: "initialize again",
    body: {
      ...call(22, "echo"),
      method: "initialize",
      params: {
        protocolVersion: VERSION,
        capabilities: {},
        clientInfo: { name: "c", version: "1" },
      },
    },
  },
  {
    what: "an unsupported protocol version",
    body: call(23, "echo"),
    headers: { "mcp-protocol-version": "1999-01-01" },
  },
  { what: "no protocol version", body: call(24, "echo"), headers: { "mcp-protocol-version": "" } },
  { what: "a foreign Host", body: call(25, "echo"), headers: { host: "evil.example:1" } },
  { what: "a foreign Origin", body: call(26, "echo"), headers: { origin: "http://evil.example" } },
  { what: "Accept without SSE", body: call(27, "echo"), headers: { accept: "application/json" } },
  { what: "no Accept", body: call(28, "echo"), headers: { accept: "" } },
  {
    what: "a text content type",
    body: call(29, "echo"),
    headers: { "content-type": "text/plain" },
  },
  {
    what: "JSON with a charset",
    body: call(30, "echo"),
    headers: { "content-type": "application/json; charset=utf-8" },
  },
  { what: "another session", body: call(31, "echo"), session: "s-2" },
];

/** The bodies the cases above send that are one request on the session, answered past the SDK. */
const PLAIN = new Set([
  "numeric id",
  "string id",
  "id 0",
  "a handler error",
  "a result the server refuses",
  "a related notification first",
  "params without a name",
  "an unknown method",
  "tools/list",
  "_meta",
  "an unsupported protocol version",
  "no protocol version",
  "a foreign Host",
  "a foreign Origin",
  "another session",
]);

for (const kind of ["sdk", "pml"] as const) {
  Deno.test(`AnswerModeTransport: a plain POST gets what the SDK's transport answers in JSON, refusals included (${kind} Server)`, async () => {
    const s = await sides(kind);
    let plain = 0;
    for (const c of CASES) {
      const before = s.sdkPosts();
      const body = typeof c.body === "string" ? JSON.parse(c.body) : c.body;
      const [theirs, ours] = await s.both(body, c.headers, c.session);
      assertEquals(ours, theirs, c.what);
      assertEquals(s.errors.pml, s.errors.sdk, `${c.what}: errors reported`);
      const wentPast = s.sdkPosts() === before;
      assertEquals(wentPast, PLAIN.has(c.what), `${c.what}: past the SDK's POST handling`);
      if (wentPast) plain++;
    }
    assert(plain >= 10);
    await s.close();
  });
}

Deno.test("AnswerModeTransport: a plain call is cancelled as the SDK's JSON call is (the handler's signal aborts), and its POST ends with no message", async () => {
  const s = await sides("pml");
  const [, pending] = s.each(call(40, "wait"));
  while (s.waiting.sdk.length + s.waiting.pml.length < 2) await new Promise((r) => setTimeout(r));
  const cancelled = {
    jsonrpc: "2.0",
    method: "notifications/cancelled",
    params: { requestId: 40, reason: "stop" },
  };
  const [theirs, ours] = await s.both(cancelled);
  assertEquals(ours.status, 202);
  assertEquals(ours, theirs);
  assert(s.waiting.sdk[0].aborted && s.waiting.pml[0].aborted);
  // Neither side answers the cancelled request; the SDK's transport holds its POST and its entries
  // until the session closes, PML's ends it with an SSE stream carrying no event.
  assertEquals(s.held(), { sdk: 1, pml: 0 });
  const answered = await pending;
  assertEquals(answered.status, 200);
  assertEquals(answered.headers.get("content-type"), "text/event-stream");
  assertEquals(answered.headers.get("mcp-session-id"), "s-1");
  assertEquals(await answered.text(), "");
  await s.close();
});
