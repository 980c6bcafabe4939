/**
 * End to end, MCP tasks (SEP-1686) through PML: server-everything's `simulate-research-query`
 * (`execution.taskSupport: "required"`), over stdio (an `npx -y` entry) and Streamable HTTP (a
 * `url` entry), brought with `bin/pml import`, run as a task by the SDK client through a spawned
 * `pml stdio` and `pml serve`, and by the same client on the server direct: the task created, its
 * status polled, its result fetched, listed, and a second one cancelled (docs/surface.md, "Tasks").
 * Then PML's rules on a task: an `ask`ed tool asks before its task exists, a denied one is refused,
 * and a task id names a task of its own session only.
 */
import { join } from "node:path";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
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
}

async function runTasks(transport: Transport, tool: string): Promise<Seen> {
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
    seen["direct (stdio)"] = await runTasks(
      new StdioClientTransport({
        command: "node",
        args: [EVERYTHING, "stdio"],
        env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
        stderr: "ignore",
      }),
      TOOL,
    );
    seen["direct (HTTP)"] = await runTasks(
      new StreamableHTTPClientTransport(new URL(http.url)),
      TOOL,
    );
    seen["pml stdio → stdio"] = await runTasks(brought.pmlStdio(), `everything__${TOOL}`);
    seen["pml stdio → HTTP"] = await runTasks(brought.pmlStdio(), `everything_http__${TOOL}`);
    {
      await using serve = await spawnServe(brought.ws, brought.env);
      const url = new URL(serve.url);
      seen["pml serve → stdio"] = await runTasks(
        new StreamableHTTPClientTransport(url),
        `everything__${TOOL}`,
      );
      seen["pml serve → HTTP"] = await runTasks(
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
    });
    for (const [path, s] of Object.entries(seen)) assertEquals(s, direct, path);
  } finally {
    await http.close();
  }
});
