/**
 * The features of server-everything an SDK client sees, one by one (docs/surface.md "Compared with
 * the server direct"): run on the server direct and through PML, the rows must be the same.
 */
import { Client } from "../../packages/pml/src/sdk/client.ts";
import type { Transport } from "../../packages/pml/src/sdk/transport.ts";
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
} from "../../packages/pml/src/sdk/types.ts";
import { InMemoryTaskStore, type RequestTaskStore } from "../../packages/pml/src/sdk/tasks.ts";

/** The features probed, in the table's order. */
export const FEATURES = [
  "tools/list",
  "tools/call text",
  "image content",
  "tool error",
  "structuredContent + outputSchema",
  "progress during a call",
  "log messages during a call",
  "sampling request",
  "elicitation request",
  "roots/list",
  "resources/list",
  "resources/templates/list",
  "resources/read",
  "resource_link read back",
  "prompts/list",
  "prompts/get with arguments",
  "completion/complete",
  "logging/setLevel",
  "tools/call as a task",
  "tasks/list, tasks/cancel",
  "task of a tool that is no task: refused",
  "elicitation request as a task",
  "sampling request as a task",
] as const;

export type Feature = typeof FEATURES[number];

/**
 * How the probed server is named where it is reached: `prefix` before its tool and prompt names
 * (`everything__` through PML, empty direct).
 */
export interface Naming {
  readonly prefix: string;
}

async function check(fn: () => Promise<boolean>): Promise<boolean> {
  try {
    return await fn();
  } catch {
    return false;
  }
}

/** Connects a client with handlers for the server's requests and probes every feature. */
export async function probe(
  transport: Transport,
  naming: Naming,
  root: string,
): Promise<Record<Feature, boolean>> {
  const client = new Client({ name: "probe", version: "1" }, {
    capabilities: {
      sampling: {},
      elicitation: { form: {} },
      roots: {},
      tasks: { requests: { elicitation: { create: {} }, sampling: { createMessage: {} } } },
    },
    taskStore: new InMemoryTaskStore(),
  });
  const logs: unknown[] = [];
  let elicited = 0;
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n));
  // A request the server asks to run as a task: the task at once, its result stored after.
  const answer = async (
    task: unknown,
    store: RequestTaskStore | undefined,
    result: Record<string, unknown>,
  ) => {
    if (!task || !store) return result;
    const created = await store.createTask({ ttl: 60_000 });
    setTimeout(() => void store.storeTaskResult(created.taskId, "completed", result), 10);
    return { task: created };
  };
  client.setRequestHandler(
    CreateMessageRequestSchema,
    (r, extra) =>
      answer(r.params.task, extra.taskStore, {
        role: "assistant",
        content: { type: "text", text: "probe-sampled" },
        model: "probe",
      }) as never,
  );
  client.setRequestHandler(ElicitRequestSchema, (r, extra) => {
    elicited++;
    return answer(r.params.task, extra.taskStore, {
      action: "accept",
      content: { name: "Probe" },
    }) as never;
  });
  client.setRequestHandler(ListRootsRequestSchema, () => ({
    roots: [{ uri: root, name: "root" }],
  }));
  await client.connect(transport);
  const tool = (n: string) => naming.prefix + n;
  const call = (n: string, args: Record<string, unknown> = {}) =>
    client.callTool({ name: tool(n), arguments: args });
  const text = (r: unknown) => JSON.stringify((r as { content?: unknown }).content ?? r);
  const out = {} as Record<Feature, boolean>;
  try {
    out["tools/list"] = await check(async () =>
      (await client.listTools()).tools.some((t) => t.name === tool("echo"))
    );
    out["tools/call text"] = await check(async () =>
      text(await call("echo", { message: "hi" })).includes("hi")
    );
    out["image content"] = await check(async () =>
      text(await call("get-tiny-image")).includes('"type":"image"')
    );
    out["tool error"] = await check(async () => {
      try {
        const r = await call("get-sum", { a: "x", b: "y" });
        return r.isError === true;
      } catch {
        return true;
      }
    });
    out["structuredContent + outputSchema"] = await check(async () => {
      const listed = (await client.listTools()).tools.find((t) =>
        t.name === tool("get-structured-content")
      );
      const r = await call("get-structured-content", { location: "New York" });
      return listed?.outputSchema !== undefined && r.structuredContent !== undefined;
    });
    out["progress during a call"] = await check(async () => {
      let n = 0;
      await client.callTool(
        { name: tool("trigger-long-running-operation"), arguments: { duration: 0.3, steps: 3 } },
        undefined,
        { onprogress: () => void n++ },
      );
      return n > 0;
    });
    out["logging/setLevel"] = await check(async () => {
      await client.setLoggingLevel("debug");
      return true;
    });
    out["log messages during a call"] = await check(async () => {
      await call("toggle-simulated-logging");
      for (let i = 0; i < 100 && !logs.length; i++) await new Promise((r) => setTimeout(r, 50));
      await call("toggle-simulated-logging");
      return logs.length > 0;
    });
    out["sampling request"] = await check(async () =>
      text(await call("trigger-sampling-request", { prompt: "hi", maxTokens: 5 })).includes(
        "probe-sampled",
      )
    );
    out["elicitation request"] = await check(async () => {
      const r = await call("trigger-elicitation-request");
      return elicited === 1 && text(r).includes("Probe");
    });
    // The server's own request as a task of its client (SEP-1686 the other way), polled by it.
    out["elicitation request as a task"] = await check(async () => {
      const r = text(await call("trigger-elicitation-request-async"));
      return r.includes("[COMPLETED]") && r.includes("Name: Probe");
    });
    out["sampling request as a task"] = await check(async () => {
      const r = text(await call("trigger-sampling-request-async", { prompt: "hi", maxTokens: 5 }));
      return r.includes("probe-sampled") && r.includes("Task created");
    });
    out["roots/list"] = await check(async () =>
      text(await call("get-roots-list")).includes("file://")
    );
    const resources = await client.listResources().catch(() => ({ resources: [] }));
    out["resources/list"] = resources.resources.length > 0;
    out["resources/templates/list"] = await check(async () =>
      (await client.listResourceTemplates()).resourceTemplates.length > 0
    );
    out["resources/read"] = await check(async () =>
      (await client.readResource({ uri: resources.resources[0].uri })).contents.length > 0
    );
    out["resource_link read back"] = await check(async () => {
      const r = await call("get-resource-links", { count: 1 });
      const link = (r.content as { type: string; uri?: string }[]).find((c) =>
        c.type === "resource_link"
      );
      return (await client.readResource({ uri: link!.uri! })).contents.length > 0;
    });
    out["prompts/list"] = await check(async () =>
      (await client.listPrompts()).prompts.some((p) => p.name === tool("simple-prompt"))
    );
    out["prompts/get with arguments"] = await check(async () =>
      JSON.stringify(
        (await client.getPrompt({ name: tool("args-prompt"), arguments: { city: "Lyon" } }))
          .messages,
      ).includes("Lyon")
    );
    out["completion/complete"] = await check(async () =>
      (await client.complete({
        ref: { type: "ref/prompt", name: tool("completable-prompt") },
        argument: { name: "department", value: "E" },
      })).completion.values.includes("Engineering")
    );
    // MCP tasks (SEP-1686): a tool that requires one, created, polled, its result fetched.
    out["tools/call as a task"] = await check(async () => {
      const seen: string[] = [];
      for await (
        const m of client.experimental.tasks.callToolStream(
          { name: tool("simulate-research-query"), arguments: { topic: "probe" } },
          CallToolResultSchema,
          { task: { ttl: 60_000 }, timeout: 60_000 },
        )
      ) {
        if (m.type === "error") throw m.error;
        seen.push(m.type === "result" ? text(m.result) : m.type);
      }
      return seen[0] === "taskCreated" && seen.includes("taskStatus") &&
        seen.at(-1)!.includes("Research Report: probe");
    });
    out["tasks/list, tasks/cancel"] = await check(async () => {
      const { task } = await client.request(
        {
          method: "tools/call",
          params: { name: tool("simulate-research-query"), arguments: { topic: "x" }, task: {} },
        },
        CreateTaskResultSchema,
      );
      const listed = (await client.experimental.tasks.listTasks()).tasks;
      const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
      return listed.some((t) => t.taskId === task.taskId) && cancelled.status === "cancelled" &&
        (await client.experimental.tasks.getTask(task.taskId)).status === "cancelled";
    });
    // A tool whose taskSupport is "forbidden": an error, and no task made.
    out["task of a tool that is no task: refused"] = await check(async () => {
      const before = (await client.experimental.tasks.listTasks()).tasks.length;
      const refused = await client.request(
        {
          method: "tools/call",
          params: { name: tool("echo"), arguments: { message: "t" }, task: {} },
        },
        CreateTaskResultSchema,
      ).then(() => false, () => true);
      return refused && (await client.experimental.tasks.listTasks()).tasks.length === before;
    });
  } finally {
    await client.close();
  }
  return out;
}

/** The table of `rows` (a column each), as docs/surface.md shows it. */
export function table(rows: Record<string, Record<Feature, boolean>>): string {
  const cols = Object.keys(rows);
  const lines = [
    `| feature | ${cols.join(" | ")} |`,
    `| --- |${cols.map(() => " --- |").join("")}`,
  ];
  for (const f of FEATURES) {
    lines.push(`| ${f} | ${cols.map((c) => (rows[c][f] ? "yes" : "**no**")).join(" | ")} |`);
  }
  return lines.join("\n");
}
