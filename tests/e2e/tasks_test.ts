/**
 * End to end, MCP tasks (SEP-1686) through PML: server-everything's `simulate-research-query`
 * (`execution.taskSupport: "required"`), over stdio (an `npx -y` entry) and Streamable HTTP (a
 * `url` entry), brought with `bin/pml import`, run as a task by the SDK client through a spawned
 * `pml stdio` and `pml serve`, and by the same client on the server direct: the task created, its
 * status polled, its result fetched, listed, a second one cancelled, and a task asked of `echo`
 * (no task) refused (docs/surface.md, "Tasks").
 * Then PML's rules on a task: an `ask`ed tool asks before its task exists, a denied one is refused,
 * and a task id names a task of its own session only.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import type { Transport } from "../../packages/pml/src/sdk/transport.ts";
import { StdioClientTransport } from "../../packages/pml/src/sdk/stdio_client.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  type Task,
} from "../../packages/pml/src/sdk/types.ts";
import { startEverything } from "../../packages/server/tests/upstream.ts";
import { PML_BIN, pmlEnv, runPml } from "./_spawn.ts";
import { spawnServe } from "./_serve.ts";

const ROOT = join(import.meta.dirname!, "..", "..");
const EVERYTHING = join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const PACKAGE = "@modelcontextprotocol/server-everything@2026.8.31";
const TOOL = "simulate-research-query";

/** npm's own cache: the test's HOME is private (as in import_test.ts). */
const NPM_CACHE = new TextDecoder().decode(
  new Deno.Command("npm", { args: ["config", "get", "cache"], stdout: "piped" }).outputSync()
    .stdout,
).trim();

/** A workspace with server-everything brought by `pml import`, stdio and HTTP, and `permissions`. */
async function broughtEverything(url: string, pmlJson: Record<string, unknown>) {
  const ws = tempWorkspace(pmlJson);
  ws.write(
    ".mcp.json",
    JSON.stringify({
      mcpServers: {
        everything: { type: "stdio", command: "npx", args: ["-y", PACKAGE] },
        everything_http: { type: "http", url },
      },
    }),
  );
  const env = { npm_config_cache: NPM_CACHE };
  const imported = await runPml(ws, ["import", "--from", "claude", "--yes"], env);
  assertEquals(imported.code, 0, imported.text);
  const pmlStdio = () =>
    new StdioClientTransport({
      command: PML_BIN,
      args: ["stdio"],
      cwd: ws.dir,
      env: pmlEnv(ws, env),
      stderr: "ignore",
    });
  return { ws, env, pmlStdio };
}

async function connect(
  transport: Transport,
  onElicit?: (message: string) => Record<string, unknown>,
): Promise<Client> {
  const client = new Client(
    { name: "tasks-e2e", version: "1.0.0" },
    { capabilities: onElicit ? { elicitation: { form: {} } } : {} },
  );
  if (onElicit) {
    client.setRequestHandler(ElicitRequestSchema, (r) => onElicit(r.params.message));
  }
  await client.connect(transport);
  return client;
}

/** What the client sees of one task run and one cancelled task, the same shape for every path. */
interface Seen {
  declared: boolean;
  taskSupport: unknown;
  created: boolean;
  polled: string[];
  statusMessage: boolean;
  result: boolean;
  listed: boolean;
  cancelled: string;
  cancelledResult: string;
  /** A task asked of `echo` (`taskSupport: "forbidden"`): refused, or a task made. */
  forbidden: "refused" | "a task";
}

/** The JSON-RPC code each path refused a task of `echo` with, by path. */
const forbiddenCodes: Record<string, number | undefined> = {};

async function runTasks(transport: Transport, tool: string, path: string): Promise<Seen> {
  const client = await connect(transport);
  try {
    const declared = client.getServerCapabilities()?.tasks?.requests?.tools?.call !== undefined;
    const listed = (await client.listTools()).tools.find((t) => t.name === tool);
    const stream = client.experimental.tasks.callToolStream(
      { name: tool, arguments: { topic: "gateways" } },
      CallToolResultSchema,
      { task: { ttl: 60_000 }, timeout: 60_000 },
    );
    let created: Task | undefined;
    const polled = new Set<string>();
    let statusMessage = false;
    let text = "";
    for await (const m of stream) {
      if (m.type === "taskCreated") created = m.task;
      else if (m.type === "taskStatus") {
        polled.add(m.task.status);
        if (m.task.statusMessage?.endsWith("...")) statusMessage = true;
      } else if (m.type === "result") {
        text = (m.result.content as { type: string; text?: string }[])[0]?.text ?? "";
      } else throw m.error;
    }
    const tasks = (await client.experimental.tasks.listTasks()).tasks;

    const second = await client.request(
      { method: "tools/call", params: { name: tool, arguments: { topic: "x" }, task: {} } },
      CreateTaskResultSchema,
    );
    const cancelled = await client.experimental.tasks.cancelTask(second.task.taskId);
    const cancelledResult = await client.experimental.tasks.getTaskResult(
      second.task.taskId,
      CallToolResultSchema,
    ).then(
      () => "a result",
      (err: Error) => err.message.includes("no result") ? "none" : err.message,
    );
    const before = (await client.experimental.tasks.listTasks()).tasks.length;
    const echo = tool.replace(TOOL, "echo");
    const forbidden = await client.request(
      { method: "tools/call", params: { name: echo, arguments: { message: "hi" }, task: {} } },
      CreateTaskResultSchema,
    ).then(
      () => "a task" as const,
      (err: { code?: number }) => {
        forbiddenCodes[path] = err.code;
        return "refused" as const;
      },
    );
    assertEquals((await client.experimental.tasks.listTasks()).tasks.length, before, path);
    return {
      declared,
      taskSupport: listed?.execution?.taskSupport,
      created: created?.status === "working",
      polled: [...polled].sort(),
      statusMessage,
      result: text.startsWith("# Research Report: gateways"),
      listed: tasks.some((t) => t.taskId === created?.taskId && t.status === "completed"),
      cancelled: cancelled.status,
      cancelledResult,
      forbidden,
    };
  } finally {
    await client.close();
  }
}

Deno.test("e2e tasks: simulate-research-query as a task, server-everything brought with pml import (stdio and HTTP), through pml stdio and pml serve, seen as direct", async () => {
  const http = await startEverything();
  try {
    const brought = await broughtEverything(http.url, {
      permissions: { allow: ["everything", "everything_http"], ask: [], deny: [] },
    });
    await using _ws = brought.ws;
    const seen: Record<string, Seen> = {};
    const run = async (path: string, transport: Transport, tool: string) =>
      seen[path] = await runTasks(transport, tool, path);
    await run(
      "direct (stdio)",
      new StdioClientTransport({
        command: "node",
        args: [EVERYTHING, "stdio"],
        env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
        stderr: "ignore",
      }),
      TOOL,
    );
    await run("direct (HTTP)", new StreamableHTTPClientTransport(new URL(http.url)), TOOL);
    await run("pml stdio → stdio", brought.pmlStdio(), `everything__${TOOL}`);
    await run("pml stdio → HTTP", brought.pmlStdio(), `everything_http__${TOOL}`);
    {
      await using serve = await spawnServe(brought.ws, brought.env);
      const url = new URL(serve.url);
      await run("pml serve → stdio", new StreamableHTTPClientTransport(url), `everything__${TOOL}`);
      await run(
        "pml serve → HTTP",
        new StreamableHTTPClientTransport(url),
        `everything_http__${TOOL}`,
      );
    }
    const direct = seen["direct (stdio)"];
    assertEquals(direct, {
      declared: true,
      taskSupport: "required",
      created: true,
      polled: ["completed", "working"],
      statusMessage: true,
      result: true,
      listed: true,
      cancelled: "cancelled",
      cancelledResult: "none",
      forbidden: "refused",
    });
    for (const [path, s] of Object.entries(seen)) assertEquals(s, direct, path);
    // Direct, the SDK's McpServer fails its own check of the answer (-32602, "Invalid task
    // creation result"); PML answers what MCP 2025-11-25 says a server should (-32601).
    for (const path of Object.keys(seen).filter((p) => p.startsWith("pml"))) {
      assertEquals(forbiddenCodes[path], -32601, path);
    }
  } finally {
    await http.close();
  }
});

/** The audit lines of `event` in the workspace's log. */
function audited(ws: { read(rel: string): string }, event: string): Record<string, unknown>[] {
  let log = "";
  try {
    log = ws.read(".pml/audit.log");
  } catch { /* none yet */ }
  return log.split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.event === event);
}

/**
 * On one client: the `ask`ed tool as a task asks first (PML's own question, before the task is
 * created), then runs; the denied one is a task that failed with PML's refusal, the server never
 * asked. Returns the id of the task that ran.
 */
async function asksThenRuns(client: Client, events: string[]): Promise<string> {
  let created: string | undefined;
  for await (
    const m of client.experimental.tasks.callToolStream(
      { name: `everything__${TOOL}`, arguments: { topic: "asked" } },
      CallToolResultSchema,
      { task: { ttl: 60_000 }, timeout: 60_000 },
    )
  ) {
    if (m.type === "taskCreated") {
      events.push("taskCreated");
      created = m.task.taskId;
    } else if (m.type === "result") {
      events.push("result");
      const text = (m.result.content as { text?: string }[])[0]?.text ?? "";
      assert(text.startsWith("# Research Report: asked"), text);
    } else if (m.type === "error") throw m.error;
  }
  assertEquals(events, ["asked", "taskCreated", "result"]);

  const denied = await client.request(
    {
      method: "tools/call",
      params: { name: `everything_http__${TOOL}`, arguments: { topic: "no" }, task: {} },
    },
    CreateTaskResultSchema,
  );
  assertEquals(denied.task.status, "failed");
  const refusal = await client.experimental.tasks.getTaskResult(
    denied.task.taskId,
    CallToolResultSchema,
  );
  assertEquals(refusal.isError, true);
  assertStringIncludes(
    JSON.stringify(refusal.content),
    `Permission denied: \\"everything_http:${TOOL}\\" is denied by .pml.json permissions`,
  );
  return created!;
}

Deno.test("e2e tasks: PML's rules on a task: an asked tool asks before its task exists, a denied one is refused, a task id names a task of its own session only (pml stdio and pml serve)", async () => {
  const http = await startEverything();
  try {
    const brought = await broughtEverything(http.url, {
      approvals: "agent",
      permissions: {
        allow: ["everything", "everything_http"],
        ask: [`everything:${TOOL}`],
        deny: [`everything_http:${TOOL}`],
      },
    });
    await using ws = brought.ws;
    const answerYes = (events: string[]) => (message: string) => {
      assertStringIncludes(message, `everything:${TOOL}`);
      events.push("asked");
      return { action: "accept", content: { decision: "yes" } };
    };

    // pml stdio.
    {
      const events: string[] = [];
      const client = await connect(brought.pmlStdio(), answerYes(events));
      try {
        await asksThenRuns(client, events);
      } finally {
        await client.close();
      }
    }

    // pml serve: two MCP sessions, and a task of the server's own (made on it directly).
    await using serve = await spawnServe(ws, brought.env);
    const url = new URL(serve.url);
    const events: string[] = [];
    const a = await connect(new StreamableHTTPClientTransport(url), answerYes(events));
    const b = await connect(new StreamableHTTPClientTransport(url));
    const direct = await connect(new StreamableHTTPClientTransport(new URL(http.url)));
    try {
      const ran = await asksThenRuns(a, events);
      assertEquals((await a.experimental.tasks.getTask(ran)).status, "completed");

      const theServers = await direct.request(
        { method: "tools/call", params: { name: TOOL, arguments: { topic: "d" }, task: {} } },
        CreateTaskResultSchema,
      );
      for (const id of [ran, theServers.task.taskId]) {
        const other = id === ran ? b : a;
        await assertRejects(() => other.experimental.tasks.getTask(id), Error, "not found");
        await assertRejects(
          () => other.experimental.tasks.getTaskResult(id, CallToolResultSchema),
          Error,
          "not found",
        );
        await assertRejects(() => other.experimental.tasks.cancelTask(id), Error, "not found");
      }
      assertEquals(
        (await b.experimental.tasks.listTasks()).tasks.map((t) => t.taskId),
        [],
        "another session lists none of the first one's tasks",
      );
      assertEquals((await a.experimental.tasks.getTask(ran)).status, "completed");
      const asked = audited(ws, "approval_decided").filter((l) =>
        JSON.stringify(l).includes(`everything:${TOOL}`)
      );
      assertEquals(asked.length, 2, "each question audited (pml stdio, pml serve)");
    } finally {
      await direct.close();
      await b.close();
      await a.close();
    }
  } finally {
    await http.close();
  }
});
