/**
 * `pml serve` (`serveHttp` over the real gateway, on a loopback port) and the SDK's `Client` over
 * Streamable HTTP: calls the client cancels leave nothing in the session, in both answer forms
 * (JSON for a client that declares neither elicitation nor sampling, SSE for one that elicits),
 * while a call still running beside them gets its answer.
 */
import { Client } from "../sdk/client.ts";
import { StreamableHTTPClientTransport } from "../sdk/http_client.ts";
import type { JSONRPCMessage } from "../sdk/types.ts";
import { ElicitRequestSchema } from "../sdk/types.ts";
import { assert, assertEquals, assertRejects } from "../testing/assert.ts";
import { tempWorkspace, testConfig, textOf } from "../testing/workspace.ts";
import { createGateway } from "../gateway/create_gateway.ts";
import { serveHttp } from "./http.ts";

const CANCELLED = 5;

/** A shell command that runs until the test writes `name` in the workspace. */
const until = (name: string) => `while [ ! -f ${name} ]; do sleep 0.05; done; echo ${name}`;

for (const form of ["json", "sse"] as const) {
  Deno.test(`pml serve: ${CANCELLED} cancelled calls leave no entry in the session, a running one is answered (${form})`, async () => {
    await using ws = tempWorkspace({ permissions: { allow: ["shell:exec"], ask: [], deny: [] } });
    const gateway = createGateway(testConfig(ws), { prewarm: false });
    const ingress = await serveHttp(gateway, { port: 0 });
    const transport = new StreamableHTTPClientTransport(new URL(ingress.url));
    // The cancellations the client posts (it sends them without waiting for their answers).
    const cancellations: Promise<void>[] = [];
    const send = transport.send.bind(transport);
    transport.send = (message: JSONRPCMessage, options) => {
      const sent = send(message, options);
      if ("method" in message && message.method === "notifications/cancelled") {
        cancellations.push(sent);
      }
      return sent;
    };
    const client = new Client(
      { name: "cancel-test", version: "1" },
      { capabilities: form === "sse" ? { elicitation: {} } : {} },
    );
    if (form === "sse") {
      client.setRequestHandler(ElicitRequestSchema, () => ({ action: "decline" }));
    }
    try {
      await client.connect(transport);
      const running = client.callTool({ name: "shell__exec", arguments: { command: until("go") } });
      running.catch(() => {}); // awaited below; closing the client rejects it if a check failed
      const aborts = Array.from({ length: CANCELLED }, () => new AbortController());
      const calls = aborts.map((abort) =>
        client.callTool(
          { name: "shell__exec", arguments: { command: until("never") } },
          undefined,
          { signal: abort.signal },
        )
      );
      // Each call is held: one entry for a plain POST, its stream and request for an SSE one.
      const perCall = form === "json" ? 1 : 2;
      while (ingress.held() < (CANCELLED + 1) * perCall) {
        await new Promise((r) => setTimeout(r, 10));
      }
      for (const abort of aborts) abort.abort("the agent moved on");
      for (const call of calls) await assertRejects(() => call);
      await Promise.all(cancellations);
      assertEquals(cancellations.length, CANCELLED);
      assertEquals(ingress.held(), perCall, "only the running call is held");

      ws.write("go", "");
      const result = await running;
      assert(!result.isError, textOf(result));
      assertEquals((result.structuredContent as { stdout: string }).stdout.trim(), "go");
      assertEquals(ingress.held(), 0);
    } finally {
      ws.write("never", "");
      await client.close();
      await ingress.shutdown();
    }
  });
}
