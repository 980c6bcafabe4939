/**
 * End to end: a real stdio MCP (the SDK's `Server`, `tests/fixtures/sampling_server.mjs`) sends
 * `sampling/createMessage` from its tool, and a spawned `pml` relays it to an SDK client that
 * declares sampling: over stdio (`pml stdio`) and over Streamable HTTP (`pml serve`, where the
 * gateway sends it as a request related to the client's `tools/call`, on that call's SSE stream).
 */
import { join } from "node:path";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import { StdioClientTransport } from "../../packages/pml/src/sdk/stdio_client.ts";
import type { Transport } from "../../packages/pml/src/sdk/transport.ts";
import {
  type CreateMessageRequest,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
} from "../../packages/pml/src/sdk/types.ts";
import { assertEquals, assertStringIncludes } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { spawnServe } from "./_serve.ts";
import { PML_BIN, pmlEnv } from "./_spawn.ts";

const ROOT = join(import.meta.dirname!, "..", "..");
const FIXTURE = join(ROOT, "tests", "fixtures", "sampling_server.mjs");

function workspace() {
  return tempWorkspace({
    permissions: { allow: ["sampler", "sampling:sampler"] },
    private_mcps: {
      sampler: {
        type: "stdio",
        install: { command: "node", args: [FIXTURE] },
        // The fixture and the SDK it imports, read-only (node_modules may be a link elsewhere).
        permissions: { read: [ROOT, Deno.realPathSync(join(ROOT, "node_modules"))] },
        tools: [{ name: "sampler:ask", inputSchema: { type: "object" } }],
      },
    },
  });
}

/**
 * An SDK client that declares sampling (answering with `answer`, recording each request) and
 * elicitation (yes to running the fixture, the raw command's question).
 */
async function connect(transport: Transport, answer: string) {
  const seen: CreateMessageRequest["params"][] = [];
  const client = new Client(
    { name: "e2e-sampling", version: "1" },
    { capabilities: { sampling: {}, elicitation: {} } },
  );
  client.setRequestHandler(CreateMessageRequestSchema, (req) => {
    seen.push(req.params);
    return {
      role: "assistant",
      model: "client-model",
      content: { type: "text", text: answer },
      stopReason: "endTurn",
    };
  });
  client.setRequestHandler(ElicitRequestSchema, (req) => ({
    action: "accept",
    content: { decision: req.params.message.startsWith("Run sampler") ? "yes" : "no" },
  }));
  await client.connect(transport);
  return Object.assign(client, { seen, [Symbol.asyncDispose]: () => client.close() });
}

/** Calls the fixture's tool and checks the client's answer reached it unchanged. */
async function roundTrip(client: Awaited<ReturnType<typeof connect>>, answer: string) {
  const r = await client.callTool({
    name: "sampler__ask",
    arguments: { prompt: "Summarise", system: "Be brief", maxTokens: 64 },
  });
  const got = JSON.parse(textOf(r));
  assertEquals(got.error, undefined, textOf(r));
  assertEquals(got.ok.content, { type: "text", text: answer });
  assertEquals(got.ok.model, "client-model");
  assertEquals(client.seen.length, 1);
  assertEquals(client.seen[0].messages, [
    { role: "user", content: { type: "text", text: "Summarise" } },
  ]);
  assertEquals(client.seen[0].systemPrompt, "Be brief");
  assertEquals(client.seen[0].maxTokens, 64);
}

Deno.test("e2e sampling: pml stdio relays the MCP's createMessage to the client's sampling handler", async () => {
  await using ws = workspace();
  await using client = await connect(
    new StdioClientTransport({
      command: PML_BIN,
      args: ["stdio"],
      cwd: ws.dir,
      env: pmlEnv(ws),
      stderr: "pipe",
    }),
    "from the stdio client",
  );
  await roundTrip(client, "from the stdio client");
  assertStringIncludes(ws.read(".pml/audit.log"), '"path":"client"');
});

Deno.test("e2e sampling: pml serve relays it to an SDK client over Streamable HTTP", async () => {
  await using ws = workspace();
  await using serve = await spawnServe(ws);
  await using client = await connect(
    new StreamableHTTPClientTransport(new URL(serve.url)),
    "from the HTTP client",
  );
  await roundTrip(client, "from the HTTP client");
  assertStringIncludes(ws.read(".pml/audit.log"), '"path":"client"');
});
