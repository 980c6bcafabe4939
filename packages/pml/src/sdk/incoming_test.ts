import { assertEquals, assertRejects } from "../testing/assert.ts";
import { Client } from "./client.ts";
import { InMemoryTransport } from "./in_memory.ts";
import { RequestFirstServer } from "./incoming.ts";
import { Server } from "./server.ts";
import { checkToolResult } from "./tool_result.ts";
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ElicitResultSchema,
  JSONRPCErrorResponseSchema,
  JSONRPCResultResponseSchema,
} from "./types.ts";

/** Counts the tries of both response schemas on a request while `fn` runs (the SDK sorts with them). */
async function responseSchemaTries(fn: () => Promise<void>): Promise<number> {
  let tries = 0;
  // Each schema's own `safeParse`, wrapped for the time of `fn`.
  const schemas = [JSONRPCResultResponseSchema, JSONRPCErrorResponseSchema] as unknown as {
    safeParse: (value: unknown) => unknown;
  }[];
  const own = schemas.map((s) => s.safeParse);
  schemas.forEach((s, i) => {
    s.safeParse = (value) => {
      if ((value as { method?: unknown })?.method !== undefined) tries++;
      return own[i].call(s, value);
    };
  });
  try {
    await fn();
  } finally {
    schemas.forEach((s, i) => (s.safeParse = own[i]));
  }
  return tries;
}

async function connected(server: Server) {
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    if (request.params.name === "ask") {
      const answer = await extra.sendRequest(
        {
          method: "elicitation/create",
          params: { message: "ok?", requestedSchema: { type: "object", properties: {} } },
        },
        ElicitResultSchema,
      );
      return { content: [{ type: "text", text: answer.action }] };
    }
    return { content: [{ type: "text", text: `called ${request.params.name}` }] };
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "t", version: "1" }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(
    (await import("./types.ts")).ElicitRequestSchema,
    () => ({ action: "accept", content: {} }),
  );
  await client.connect(clientSide);
  return client;
}

const info = { name: "s", version: "1" };
const options = { capabilities: { tools: {} } };
const make = (sdkOnly = false): Server =>
  sdkOnly ? new Server(info, options) : new RequestFirstServer(info, options);

Deno.test("request-first server: a tools/call is sorted by the request schema alone", async () => {
  const client = await connected(make());
  let text = "";
  const tries = await responseSchemaTries(async () => {
    const r = await client.callTool({ name: "x", arguments: {} });
    text = (r.content as { text: string }[])[0].text;
  });
  assertEquals(text, "called x");
  assertEquals(tries, 0);
  await client.close();
});

Deno.test("request-first server: the SDK's own Server tries both response schemas on a request", async () => {
  // What RequestFirstServer saves; if the SDK stops doing it, RequestFirstServer can go.
  const client = await connected(make(true));
  assertEquals(await responseSchemaTries(() => client.callTool({ name: "x" }).then(() => {})), 2);
  await client.close();
});

Deno.test("request-first server: answers to its own requests and bad requests take the SDK's path", async () => {
  const client = await connected(make());
  // The client's answer to the server's elicitation is a response: sorted by the SDK.
  const r = await client.callTool({ name: "ask", arguments: {} });
  assertEquals((r.content as { text: string }[])[0].text, "accept");
  // Invalid params still fail the SDK's own schema of tools/call.
  await assertRejects(
    () =>
      client.request({ method: "tools/call", params: { name: 7 } } as never, ElicitResultSchema),
    Error,
    "Invalid",
  );
  await client.close();
});

/** Counts the runs of the SDK's `CallToolResultSchema` (any parse of it) while `fn` runs. */
async function resultSchemaRuns(fn: () => Promise<void>): Promise<number> {
  const zod = (CallToolResultSchema as unknown as { _zod: { run: (...a: unknown[]) => unknown } })
    ._zod;
  const own = zod.run;
  let runs = 0;
  zod.run = (...a) => (runs++, own.apply(zod, a));
  try {
    await fn();
  } finally {
    zod.run = own;
  }
  return runs;
}

async function answering(server: Server, result: unknown) {
  server.setRequestHandler(CallToolRequestSchema, () => result as never);
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "t", version: "1" });
  await client.connect(clientSide);
  return client;
}

Deno.test("request-first server: a result checked as it arrived is not parsed again; others are, as the SDK does", async () => {
  const content = [{ type: "text", text: "hi" }];
  const refusals: string[] = [];
  for (const sdkOnly of [false, true]) {
    // The client parses every result once itself; the server's own check is the rest.
    const checked = await answering(make(sdkOnly), checkToolResult({ content }));
    const runs = await resultSchemaRuns(() => checked.callTool({ name: "x" }).then(() => {}));
    assertEquals(runs, sdkOnly ? 2 : 1);
    await checked.close();
    const plain = await answering(make(sdkOnly), { content });
    assertEquals(await resultSchemaRuns(() => plain.callTool({ name: "x" }).then(() => {})), 2);
    await plain.close();
    // A result that does not conform: the SDK's error, word for word, from both servers.
    const bad = await answering(make(sdkOnly), { content: [{ type: "text" }] });
    const err = await assertRejects(() => bad.callTool({ name: "x" }), Error);
    assertEquals((err as { code?: number }).code, -32602);
    refusals.push(err.message);
    await bad.close();
  }
  assertEquals(refusals[0], refusals[1]);
  assertEquals(refusals[0].includes("Invalid tools/call result: "), true);
});

/** Raw JSON-RPC lines to `server`: what its tools/call handler got and what came back, in order. */
async function rawExchange(server: Server, messages: unknown[]) {
  const got: unknown[] = [];
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    got.push(request);
    return { content: [{ type: "text", text: "ok" }] };
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const answers: unknown[] = [];
  clientSide.onmessage = (m) => answers.push(m);
  await server.connect(serverSide);
  await clientSide.start();
  for (const m of messages) await clientSide.send(m as never);
  for (let i = 0; i < 20 && answers.length < messages.length; i++) {
    await new Promise((r) => setTimeout(r, 5));
  }
  await clientSide.close();
  return { got, answers };
}

Deno.test("request-first server: what reaches tools/call and what is answered is the SDK Server's, for common and odd calls", async () => {
  const call = (id: unknown, params: unknown, extra: Record<string, unknown> = {}) => ({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params,
    ...extra,
  });
  const messages = [
    call(1, { name: "a", arguments: { x: [1], y: { z: "é" } } }),
    call("s", { arguments: {}, name: "b", _meta: { progressToken: 7 } }),
    call(3, { name: "c", _meta: { progressToken: "t", other: 1 } }),
    call(4, { name: "d", extra: "stripped by the schema" }),
    call(5, { name: "e", arguments: [] }),
    call(6, { name: 6 }),
    call(7, { name: "g" }, { extra: "not a request: strict envelope" }),
    call(8, JSON.parse('{"name":"h","arguments":{"__proto__":{"p":1},"q":2}}')),
    call(1.5, { name: "i" }),
  ];
  const ours = await rawExchange(make(), messages);
  const sdk = await rawExchange(make(true), messages);
  assertEquals(ours.answers.length, sdk.answers.length);
  assertEquals(JSON.stringify(ours.answers), JSON.stringify(sdk.answers));
  assertEquals(ours.got.length, 5); // ids 1, "s", 3, 4 and 8: the others are refused
  assertEquals(JSON.stringify(ours.got), JSON.stringify(sdk.got));
  // Prototypes too: the arguments with `__proto__` reach the handler as the SDK's parse made them.
  assertEquals(
    ours.got.map((r) => Object.getPrototypeOf((r as { params: object }).params)),
    sdk.got.map((r) => Object.getPrototypeOf((r as { params: object }).params)),
  );
});
