/**
 * What a fronted server asks during a call, over a linked pair of the SDK's in-memory transports:
 * PML's {@link UpstreamSession} on one end, an SDK `Server` of the test's own on the other. A
 * question relayed is withdrawn when the server cancels it (`notifications/cancelled`), cancels its
 * task (`tasks/cancel`), or the call ends; with calls of two MCP sessions of PML's clients in
 * flight, a question reaches neither (the server gets an error) and a log line goes to every
 * client as one outside a call; with one session's calls, the oldest call takes it as before.
 */
import { assertEquals, assertStringIncludes } from "../../testing/assert.ts";
import { InMemoryTransport } from "../../sdk/in_memory.ts";
import { Server } from "../../sdk/server.ts";
import {
  CallToolRequestSchema,
  CancelTaskResultSchema,
  CreateMessageResultSchema,
  CreateTaskResultSchema,
  type ElicitRequest,
  ElicitResultSchema,
  ListToolsRequestSchema,
  type ServerNotification,
} from "../../sdk/types.ts";
import { InMemoryTaskMessageQueue, InMemoryTaskStore } from "../../sdk/tasks.ts";
import { UpstreamSession } from "./upstream_session.ts";
import { UpstreamHub } from "./upstream_hub.ts";
import { elicitationLabel, type ServerElicit } from "./server_requests.ts";

const ASK = { message: "Your name?", requestedSchema: { type: "object" as const, properties: {} } };

/**
 * The test's server: `ask` elicits (its `mode` says how: `plain`, cancelled by the server when
 * the test calls `withdraw`; `task-cancel`, as a task the server then cancels; `task-end`, as a
 * task, the call ending at once; `sample`, a sampling request; `log`, a log line) and answers
 * what became of it; `hold`, and `ask` once it cancelled its task, run until the test calls
 * `release`.
 */
async function upstream() {
  let withdraw = () => {};
  /** Opened by `release`, closed again by the call that passed it. */
  let gate = Promise.withResolvers<void>();
  const held = async () => {
    await gate.promise;
    gate = Promise.withResolvers<void>();
  };
  const server = new Server({ name: "up", version: "1" }, {
    capabilities: { tools: {}, logging: {}, tasks: { requests: { tools: { call: {} } } } },
    taskStore: new InMemoryTaskStore(),
    taskMessageQueue: new InMemoryTaskMessageQueue(),
  });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [{
      name: "job",
      inputSchema: { type: "object" as const },
      execution: { taskSupport: "optional" as const },
    }],
  }));
  server.setRequestHandler(CallToolRequestSchema, async (r, extra) => {
    const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });
    const mode = r.params.arguments?.mode;
    if (r.params.name === "job") {
      // As a task: its question names the task (related-task), its answer is the task's result.
      const store = extra.taskStore!;
      const task = await store.createTask({ ttl: 60_000, pollInterval: 10 });
      // Queued for the client's tasks/result, which it reads once the task waits for input.
      await store.updateTaskStatus(task.taskId, "input_required");
      void server.request({ method: "elicitation/create", params: ASK }, ElicitResultSchema, {
        relatedTask: { taskId: task.taskId },
      }).then((a) => text(a.action), (err: Error) => text(`refused: ${err.message}`))
        .then((result) => store.storeTaskResult(task.taskId, "completed", result));
      return { task };
    }
    if (r.params.name === "hold") {
      await held();
      return text("held");
    }
    if (mode === "log") {
      await extra.sendNotification({
        method: "notifications/message",
        params: { level: "info", data: "a line" },
      });
      return text("logged");
    }
    if (mode === "sample") {
      return await extra.sendRequest(
        {
          method: "sampling/createMessage",
          params: {
            messages: [{ role: "user", content: { type: "text", text: "hi" } }],
            maxTokens: 5,
          },
        },
        CreateMessageResultSchema,
      ).then((m) => text(JSON.stringify(m)), (err: Error) => text(`refused: ${err.message}`));
    }
    if (mode === "plain") {
      const cancel = new AbortController();
      withdraw = () => cancel.abort("the server changed its mind");
      return await extra.sendRequest(
        { method: "elicitation/create", params: ASK },
        ElicitResultSchema,
        { signal: cancel.signal },
      ).then((a) => text(a.action), (err: Error) => text(`refused: ${err.message}`));
    }
    const { task } = await extra.sendRequest(
      { method: "elicitation/create", params: { ...ASK, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    if (mode === "task-cancel") {
      await extra.sendRequest(
        { method: "tasks/cancel", params: { taskId: task.taskId } },
        CancelTaskResultSchema,
      );
      // Still in flight: only the cancellation can withdraw the question.
      await held();
    }
    return text(task.status);
  });
  const [mine, theirs] = InMemoryTransport.createLinkedPair();
  await server.connect(theirs);
  const hub = new UpstreamHub({ workspace: "/ws" });
  const broadcast: ServerNotification[] = [];
  hub.attach((n) => Promise.resolve(void broadcast.push(n)));
  const session = await UpstreamSession.open("up", mine, { timeoutMs: 10_000, hub });
  return {
    session,
    broadcast,
    withdraw: () => withdraw(),
    release: () => gate.resolve(),
    async [Symbol.asyncDispose]() {
      await session.close();
      await server.close();
    },
  };
}

/** A client's elicitation that never answers: each question asked, and its withdrawal. */
function pendingElicit() {
  const asked: ElicitRequest["params"][] = [];
  const withdrawn = Promise.withResolvers<unknown>();
  const elicit: ServerElicit = (params, signal) => {
    asked.push(params);
    return new Promise((_, reject) =>
      signal.addEventListener("abort", () => {
        withdrawn.resolve(signal.reason);
        reject(signal.reason);
      })
    );
  };
  return { asked, withdrawn: withdrawn.promise, elicit };
}

function textOf(result: { content: unknown[] }): string {
  return (result.content as { text?: string }[]).map((c) => c.text ?? "").join("");
}

Deno.test("server requests: a question the server cancels (notifications/cancelled) is withdrawn from the client", async () => {
  await using up = await upstream();
  const client = pendingElicit();
  const call = up.session.callTool("ask", { mode: "plain" }, {
    timeoutMs: 10_000,
    elicit: client.elicit,
  });
  for (let i = 0; i < 200 && !client.asked.length; i++) await new Promise((r) => setTimeout(r));
  assertEquals(client.asked[0]?.message, elicitationLabel("up") + ASK.message);
  up.withdraw();
  await client.withdrawn;
  assertStringIncludes(textOf(await call), "refused");
});

Deno.test("server requests: a question asked as a task is withdrawn when the server cancels its task, and when the call it was asked in ends", async () => {
  await using up = await upstream();
  for (const mode of ["task-cancel", "task-end"]) {
    const client = pendingElicit();
    const call = up.session.callTool("ask", { mode }, {
      timeoutMs: 10_000,
      elicit: client.elicit,
    });
    await client.withdrawn;
    assertEquals(client.asked.length, 1, mode);
    up.release();
    assertEquals(textOf(await call), "working", mode);
  }
});

Deno.test("server requests: with calls of two MCP sessions in flight, a question reaches neither (the server is refused) and a log line goes to every client; with one session's, the oldest call takes it", async () => {
  await using up = await upstream();
  const a = { clientSession: {}, ...pendingElicit(), logs: [] as unknown[] };
  const b = { clientSession: {}, ...pendingElicit(), logs: [] as unknown[] };
  const opts = (who: typeof a) => ({
    timeoutMs: 10_000,
    clientSession: who.clientSession,
    elicit: who.elicit,
    sample: () => Promise.reject(new Error("no sampling here")),
    log: (params: unknown) => Promise.resolve(void who.logs.push(params)),
  });
  const held = up.session.callTool("hold", {}, opts(a));
  for (const mode of ["plain", "sample"]) {
    const refused = textOf(await up.session.callTool("ask", { mode }, opts(b)));
    assertStringIncludes(refused, `of "up" is not relayed: calls of several MCP sessions`, mode);
  }
  await up.session.callTool("ask", { mode: "log" }, opts(b));
  assertEquals([a.asked, b.asked, a.logs, b.logs], [[], [], [], []], "nothing reached A or B");
  assertEquals(up.broadcast.map((n) => n.method), ["notifications/message"]);

  // One session's calls: its oldest call takes the question, as before.
  const same = up.session.callTool("ask", { mode: "plain" }, {
    ...opts(b),
    clientSession: a.clientSession,
  });
  for (let i = 0; i < 200 && !a.asked.length; i++) await new Promise((r) => setTimeout(r));
  assertEquals([a.asked.length, b.asked.length], [1, 0]);
  up.withdraw();
  await a.withdrawn;
  await same;
  up.release();
  assertEquals(textOf(await held), "held");
});

Deno.test("server requests: a message that came on a call's own stream (a registry http MCP's, through the cloud) is that call's, whatever other sessions' calls are in flight", async () => {
  await using up = await upstream();
  const asked: string[] = [];
  const logs: string[] = [];
  const calls = ["a", "b"].map((who) => ({
    timeoutMs: 10_000,
    clientSession: {},
    elicit: () =>
      Promise.resolve(void asked.push(who)).then(() => ({ action: "decline" as const })),
    log: () => Promise.resolve(void logs.push(who)),
  }));
  const released = calls.map((c) => up.session.adopt(c));
  up.session.deliver(
    { jsonrpc: "2.0", id: 900, method: "elicitation/create", params: ASK },
    calls[1],
  );
  up.session.deliver(
    { jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: "x" } },
    calls[0],
  );
  for (let i = 0; i < 200 && (!asked.length || !logs.length); i++) {
    await new Promise((r) => setTimeout(r));
  }
  assertEquals([asked, logs], [["b"], ["a"]]);
  for (const release of released) release();
});

Deno.test("server requests: a question that names the server's task of a call (related-task) is that call's, whatever other sessions' calls are in flight", async () => {
  await using up = await upstream();
  const asked: string[] = [];
  const call = (who: string) => ({
    timeoutMs: 10_000,
    clientSession: {},
    elicit: () => Promise.resolve(void asked.push(who)).then(() => ({ action: "accept" as const })),
  });
  const held = up.session.callTool("hold", {}, call("a"));
  held.catch(() => {/* awaited below; a failure first must not hide behind it */});
  const job = await up.session.callTool("job", {}, {
    ...call("b"),
    task: { started: () => {}, status: () => {} },
  });
  assertEquals(textOf(job), "accept");
  assertEquals(asked, ["b"]);
  up.release();
  await held;
});
