/**
 * End to end: a local MCP's `sampling/createMessage` relayed by a spawned `pml` to the connected
 * SDK client, over stdio and over `pml serve` (Streamable HTTP carries the server→client request
 * on the tool call's own stream), and the MCP's cancellation forwarded to the client.
 */
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import { StdioClientTransport } from "../../packages/pml/src/sdk/stdio_client.ts";
import type { Transport } from "../../packages/pml/src/sdk/transport.ts";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
} from "../../packages/pml/src/sdk/types.ts";
import { assertEquals, assertStringIncludes } from "../../packages/pml/src/testing/assert.ts";
import { samplerWorkspace } from "../../packages/pml/src/sampling/_testing.ts";
import { spawnServe } from "./_serve.ts";
import { PML_BIN, pmlEnv } from "./_spawn.ts";

function workspace() {
  return samplerWorkspace({ allow: ["sampler", "sampling:sampler"] });
}

/** An SDK client that answers the raw command's approval and relays sampling to `answer`. */
async function connect(
  transport: Transport,
  answer: (prompt: string, signal: AbortSignal) => Promise<string>,
) {
  const client = new Client(
    { name: "e2e-sampling", version: "1" },
    { capabilities: { elicitation: {}, sampling: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, () => ({
    action: "accept",
    content: { decision: "yes" },
  }));
  client.setRequestHandler(CreateMessageRequestSchema, async (req, extra) => {
    const first = req.params.messages[0].content as { text: string };
    return {
      role: "assistant",
      model: "client-model",
      content: { type: "text", text: await answer(first.text, extra.signal) },
    };
  });
  await client.connect(transport);
  return Object.assign(client, { [Symbol.asyncDispose]: () => client.close() });
}

const echo = (prompt: string) => Promise.resolve(`client says: ${prompt}`);

function answerOf(result: unknown) {
  const text = (result as { content: { text: string }[] }).content[0].text;
  return JSON.parse(text) as { ok?: { content: { text: string } }; error?: string };
}

Deno.test("e2e sampling over stdio: pml stdio relays the MCP's request to the client and its answer back", async () => {
  await using ws = workspace();
  await using client = await connect(
    new StdioClientTransport({
      command: PML_BIN,
      args: ["stdio"],
      cwd: ws.dir,
      env: pmlEnv(ws),
      stderr: "pipe",
    }),
    echo,
  );
  const r = await client.callTool({ name: "sampler__ask", arguments: { prompt: "over stdio" } });
  assertEquals(answerOf(r).ok?.content.text, "client says: over stdio");
});

Deno.test("e2e sampling over pml serve: the request reaches the HTTP client on the call's stream, with two sessions; never the other session's", async () => {
  await using ws = workspace();
  await using serve = await spawnServe(ws);
  const seenByA: string[] = [];
  const askedA = Promise.withResolvers<void>();
  const releaseA = Promise.withResolvers<void>();
  await using a = await connect(
    new StreamableHTTPClientTransport(new URL(serve.url)),
    async (p) => {
      seenByA.push(p);
      askedA.resolve();
      await releaseA.promise;
      return `session a: ${p}`;
    },
  );
  await using b = await connect(
    new StreamableHTTPClientTransport(new URL(serve.url)),
    (p) => Promise.resolve(`session b: ${p}`),
  );
  // A's call waits on its own client's answer; the server's request during B's call, with calls
  // of both sessions in flight, cannot be told from A's: refused, never shown to A.
  const ra = a.callTool({ name: "sampler__ask", arguments: { prompt: "one" } });
  await askedA.promise;
  const refused = await b.callTool({ name: "sampler__ask", arguments: { prompt: "two" } });
  assertStringIncludes(answerOf(refused).error ?? "", "is not relayed: calls of several MCP");
  releaseA.resolve();
  assertEquals(answerOf(await ra).ok?.content.text, "session a: one");
  assertEquals(seenByA, ["one"]);
  // B alone: its own client answers, on its call's stream.
  const rb = await b.callTool({ name: "sampler__ask", arguments: { prompt: "two" } });
  assertEquals(answerOf(rb).ok?.content.text, "session b: two");
});

for (const via of ["stdio", "pml serve"] as const) {
  Deno.test(`e2e sampling over ${via}: the MCP's cancellation (its request timed out) reaches the client's handler`, async () => {
    await using ws = workspace();
    let aborted!: () => void;
    const sawAbort = new Promise<void>((r) => (aborted = r));
    await using serve = via === "pml serve" ? await spawnServe(ws) : undefined;
    const transport = serve
      ? new StreamableHTTPClientTransport(new URL(serve.url))
      : new StdioClientTransport({
        command: PML_BIN,
        args: ["stdio"],
        cwd: ws.dir,
        env: pmlEnv(ws),
        stderr: "pipe",
      });
    await using client = await connect(
      transport,
      (_prompt, signal) =>
        new Promise((_, reject) => {
          signal.addEventListener("abort", () => (aborted(), reject(new Error("cancelled"))));
        }),
    );
    const r = await client.callTool({
      name: "sampler__ask",
      arguments: { prompt: "slow", timeoutMs: 1500 },
    });
    assertStringIncludes(answerOf(r).error ?? "", "timed out");
    await sawAbort;
  });
}

Deno.test("e2e sampling over pml serve: a call resumed with pml:continue samples through the resuming request's stream", async () => {
  await using ws = samplerWorkspace({ allow: ["sampling:sampler"], ask: ["sampler"] }, {
    approvals: "agent",
  });
  await using serve = await spawnServe(ws);
  // Sampling but no elicitation: the ask becomes approval_required, answered with pml:continue.
  const client = new Client({ name: "e2e-resume", version: "1" }, {
    capabilities: { sampling: {} },
  });
  client.setRequestHandler(CreateMessageRequestSchema, (req) => {
    const first = req.params.messages[0].content as { text: string };
    return {
      role: "assistant",
      model: "client-model",
      content: { type: "text", text: `resumed: ${first.text}` },
    };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(serve.url)));
  try {
    const asked = await client.callTool({ name: "sampler__ask", arguments: { prompt: "later" } });
    const pending = asked.structuredContent as { status: string; workflow_id: string };
    assertEquals(pending.status, "approval_required", JSON.stringify(asked));
    const r = await client.callTool({
      name: "pml__continue",
      arguments: { workflow_id: pending.workflow_id, decision: "yes" },
    });
    assertEquals(answerOf(r).ok?.content.text, "resumed: later", JSON.stringify(r));
  } finally {
    await client.close();
  }
});
