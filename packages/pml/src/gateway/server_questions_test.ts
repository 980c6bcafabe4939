/**
 * A fronted server's question through the gateway's MCP face (an SDK client over InMemoryTransport)
 * to the real server-everything over Streamable HTTP as a remote `private_mcps` server: once the
 * call it was asked in ends (here the client cancels it), the question still pending at the client
 * is withdrawn (`notifications/cancelled`), whether the server asked it plainly
 * (`trigger-elicitation-request`) or as a task of PML's (`trigger-elicitation-request-async`).
 */
import { assertEquals, assertRejects } from "../testing/assert.ts";
import { tempWorkspace, testConfig } from "../testing/workspace.ts";
import { startEverything } from "../../../server/tests/upstream.ts";
import { Client } from "../sdk/client.ts";
import { InMemoryTransport } from "../sdk/in_memory.ts";
import { ElicitRequestSchema } from "../sdk/types.ts";
import { createGateway } from "./create_gateway.ts";
import { createMcpServer } from "./mcp_server.ts";
import { elicitationLabel } from "../targets/upstream/server_requests.ts";

Deno.test("server questions: a question pending at the client is withdrawn once the call it was asked in ends, asked plainly or as a task", async () => {
  const everything = await startEverything();
  try {
    await using ws = tempWorkspace({
      approvals: "agent",
      permissions: { allow: ["everything"], ask: [], deny: [] },
      private_mcps: { everything: { type: "http", proxyTo: everything.url } },
    });
    const gateway = createGateway(testConfig(ws), { prewarm: false });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = createMcpServer(gateway);
    await server.connect(serverSide);
    const client = new Client({ name: "test", version: "1" }, {
      capabilities: { elicitation: { form: {} } },
    });
    /** The call in flight, cancelled by the client once its question arrives. */
    let call = new AbortController();
    const asked: string[] = [];
    const withdrawn: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (r, extra) => {
      asked.push(r.params.message);
      call.abort("the user closed the tool call");
      // Never answered: only a withdrawal ends it.
      return new Promise((_, reject) =>
        extra.signal.addEventListener("abort", () => {
          withdrawn.push(String(extra.signal.reason));
          reject(extra.signal.reason);
        })
      );
    });
    await client.connect(clientSide);
    try {
      for (const tool of ["trigger-elicitation-request", "trigger-elicitation-request-async"]) {
        call = new AbortController();
        asked.length = withdrawn.length = 0;
        await assertRejects(() =>
          client.callTool({ name: `everything__${tool}`, arguments: {} }, undefined, {
            signal: call.signal,
            timeout: 60_000,
          })
        );
        for (let i = 0; i < 400 && !withdrawn.length; i++) {
          await new Promise((r) => setTimeout(r, 25));
        }
        assertEquals(asked.length, 1, tool);
        assertEquals(asked[0].startsWith(elicitationLabel("everything")), true, asked[0]);
        assertEquals(withdrawn.length, 1, `${tool}: the question was never withdrawn`);
      }
    } finally {
      await client.close();
      await server.close();
      await gateway.close();
    }
  } finally {
    await everything.close();
  }
});
