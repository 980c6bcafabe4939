/**
 * MCP tasks through the gateway's MCP face (an SDK client over InMemoryTransport) to a remote
 * `private_mcps` server: the real server-everything asking its question while its task waits
 * (`input_required`), and a server of the test's own whose task store the test reads: a task
 * cancelled through PML is cancelled on the server, a tool that requires a task answers a plain
 * call, and `execution` is listed and pinned.
 */
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { tempWorkspace, testConfig } from "../testing/workspace.ts";
import { serveMcp } from "../testing/mcp_http.ts";
import { startEverything } from "../../../server/tests/upstream.ts";
import { Client } from "../sdk/client.ts";
import { Server } from "../sdk/server.ts";
import { InMemoryTransport } from "../sdk/in_memory.ts";
import { InMemoryTaskStore } from "../sdk/tasks.ts";
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ListToolsRequestSchema,
} from "../sdk/types.ts";
import { createGateway } from "./create_gateway.ts";
import { createMcpServer } from "./mcp_server.ts";
import { elicitationLabel } from "../targets/upstream/server_requests.ts";
import { toolHash } from "../registry/mcp_pins.ts";

function workspace(server: string, url: string) {
  return tempWorkspace({
    approvals: "agent",
    permissions: { allow: [server], ask: [], deny: [] },
    private_mcps: { [server]: { type: "http", proxyTo: url } },
  });
}

/** The gateway of `ws` and a client of it that elicits with `elicit`. */
async function connect(
  ws: ReturnType<typeof tempWorkspace>,
  elicit?: (message: string) => Record<string, unknown>,
) {
  const gateway = createGateway(testConfig(ws), { prewarm: false });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = createMcpServer(gateway);
  await server.connect(serverSide);
  const client = new Client(
    { name: "test", version: "1" },
    { capabilities: elicit ? { elicitation: {} } : {} },
  );
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, (r) => ({
      action: "accept",
      content: elicit(r.params.message),
    }));
  }
  await client.connect(clientSide);
  return {
    client,
    async [Symbol.asyncDispose]() {
      await client.close();
      await server.close();
      await gateway.close();
    },
  };
}

Deno.test("tasks: a fronted server's question while its task waits (input_required) reaches the client through tasks/result, labelled its, and the answer goes back", async () => {
  const everything = await startEverything();
  try {
    await using ws = workspace("everything", everything.url);
    const asked: string[] = [];
    await using g = await connect(ws, (message) => {
      asked.push(message);
      return { interpretation: "programming" };
    });
    const statuses = new Set<string>();
    let text = "";
    for await (
      const m of g.client.experimental.tasks.callToolStream(
        {
          name: "everything__simulate-research-query",
          arguments: { topic: "python", ambiguous: true },
        },
        CallToolResultSchema,
        { task: { ttl: 60_000 }, timeout: 60_000 },
      )
    ) {
      if (m.type === "taskStatus") statuses.add(m.task.status);
      else if (m.type === "result") {
        text = (m.result.content as { text?: string }[])[0]?.text ?? "";
      } else if (m.type === "error") throw m.error;
    }
    assert(statuses.has("input_required"), [...statuses].join(", "));
    assertEquals(asked.length, 1);
    assert(asked[0].startsWith(elicitationLabel("everything")), asked[0]);
    assertStringIncludes(text, "# Research Report: python (programming)");
  } finally {
    await everything.close();
  }
});

/**
 * A server whose tools require a task: `slow` never ends, `quick` ends at once (and `plain` is no
 * task). Its task store is the test's to read.
 */
function taskServer() {
  const store = new InMemoryTaskStore();
  const served = serveMcp(() => {
    const server = new Server(
      { name: "jobs", version: "1" },
      {
        capabilities: { tools: {}, tasks: { cancel: {}, requests: { tools: { call: {} } } } },
        taskStore: store,
      },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: (["slow", "quick", "plain"] as const).map((name) => ({
        name,
        description: `A ${name} job`,
        inputSchema: { type: "object" as const },
        execution: { taskSupport: name === "plain" ? "forbidden" as const : "required" as const },
      })),
    }));
    server.setRequestHandler(CallToolRequestSchema, async (r, extra) => {
      if (r.params.name === "plain") return { content: [{ type: "text", text: "plain" }] };
      const task = await extra.taskStore!.createTask({ ttl: 60_000, pollInterval: 50 });
      if (r.params.name === "quick") {
        await extra.taskStore!.storeTaskResult(task.taskId, "completed", {
          content: [{ type: "text", text: "done" }],
        });
      }
      return { task };
    });
    return server;
  });
  return { url: served.url, store, [Symbol.asyncDispose]: () => served[Symbol.asyncDispose]() };
}

Deno.test("tasks: listed and pinned with execution; a task cancelled through PML is cancelled on the server; a plain call of a tool that requires a task gets its result", async () => {
  await using jobs = taskServer();
  await using ws = workspace("jobs", jobs.url);
  await using g = await connect(ws);

  const { tools } = await g.client.listTools();
  const slow = tools.find((t) => t.name === "jobs__slow");
  assertEquals(slow?.execution, { taskSupport: "required" });
  // Pinned with it; the default (`forbidden`, which SDK servers state for every other tool)
  // hashes as a definition without `execution`.
  const pinned = JSON.parse(ws.read(".pml/mcp.lock")).entries["pml.mcp.jobs.server"].tools;
  const def = (name: string) => ({
    name,
    description: `A ${name} job`,
    inputSchema: { type: "object" },
  });
  assertEquals(
    pinned.slow,
    await toolHash({ ...def("slow"), execution: { taskSupport: "required" } }),
  );
  assert(pinned.slow !== await toolHash(def("slow")));
  assertEquals(pinned.plain, await toolHash(def("plain")));

  const created = await g.client.request(
    { method: "tools/call", params: { name: "jobs__slow", arguments: {}, task: { ttl: 30_000 } } },
    CreateTaskResultSchema,
  );
  const [theirs] = jobs.store.getAllTasks();
  assert(theirs, "the server made its task");
  assert(theirs.taskId !== created.task.taskId, "the client sees PML's task id, not the server's");
  assertEquals((await g.client.experimental.tasks.getTask(created.task.taskId)).status, "working");

  const cancelled = await g.client.experimental.tasks.cancelTask(created.task.taskId);
  assertEquals(cancelled.status, "cancelled");
  for (
    let i = 0;
    i < 500 && (await jobs.store.getTask(theirs.taskId))?.status !== "cancelled";
    i++
  ) {
    await new Promise((r) => setTimeout(r, 10));
  }
  assertEquals((await jobs.store.getTask(theirs.taskId))?.status, "cancelled");

  // Not `callTool`, which refuses a tool its last list said requires a task.
  const plain = await g.client.request(
    { method: "tools/call", params: { name: "jobs__quick", arguments: {} } },
    CallToolResultSchema,
  );
  assertEquals(plain.content, [{ type: "text", text: "done" }]);
});

Deno.test("tasks: a task asked of a tool that does not run as one (its taskSupport forbidden, or PML's own tool) is -32601 before anything runs and makes no task; an unknown tool stays -32602", async () => {
  await using jobs = taskServer();
  await using ws = workspace("jobs", jobs.url);
  await using g = await connect(ws);
  const asTask = (name: string) =>
    g.client.request(
      { method: "tools/call", params: { name, arguments: {}, task: { ttl: 30_000 } } },
      CreateTaskResultSchema,
    );
  const code = (err: unknown) => (err as { code?: number }).code;
  for (const name of ["jobs__plain", "pml__continue"]) {
    const err = await asTask(name).then(() => undefined, (e) => e);
    assertEquals(code(err), -32601, `${name}: ${err}`);
    assertStringIncludes(String(err), `"${name}" does not run as a task`);
  }
  assertEquals(code(await asTask("jobs__nothing").then(() => undefined, (e) => e)), -32602);
  assertEquals((await g.client.experimental.tasks.listTasks()).tasks, [], "no task of PML's");
  assertEquals(jobs.store.getAllTasks(), [], "nothing ran on the server");
  // The tool that runs as one still does, and the plain tool as a call.
  assert((await asTask("jobs__quick")).task.taskId);
  const plain = await g.client.request(
    { method: "tools/call", params: { name: "jobs__plain", arguments: {} } },
    CallToolResultSchema,
  );
  assertEquals(plain.content, [{ type: "text", text: "plain" }]);
});
