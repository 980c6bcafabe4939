/**
 * MCP tasks (SEP-1686) of a fronted server, on its {@link UpstreamSession}: which of its tools run
 * as a task (their `execution.taskSupport`, as its `tools/list` said) and one such call, made with
 * the SDK client's own task machinery (`callToolStream`: the task created, its status polled, its
 * result fetched), the server's task cancelled when the call is (docs/surface.md, "Tasks").
 *
 * @module
 */
import type { Client } from "../../sdk/client.ts";
import {
  type CallToolResult,
  CallToolResultSchema,
  ErrorCode,
  McpError,
  type Request,
  type RequestId,
  type Result,
  type ServerCapabilities,
  type Task,
  type Tool,
} from "../../sdk/types.ts";
import {
  type CreateTaskOptions,
  InMemoryTaskStore,
  isTerminal,
  type TaskStore,
} from "../../sdk/tasks.ts";
import type { ProgressReport } from "./server_requests.ts";

/** A call the client runs as an MCP task: what PML's own task learns of the server's. */
export interface TaskCall {
  /** The time to live the client asked for (ms). */
  readonly ttl?: number;
  /**
   * The server created its task: the client's task is answered now (a question of PML's before
   * it was asked on the call itself).
   */
  started(task: Task): void;
  /** A status of the server's task that is not final (`working`, `input_required`). */
  status(status: Task["status"], message?: string): void;
}

/**
 * The SDK's in-memory task store, with the run of each task: aborted when the task is cancelled
 * (the other side's `tasks/cancel`, which the SDK's handler turns into a status) or the store is
 * closed. PML's tasks of one MCP session of its clients (`gateway/task_calls.ts`), and its tasks
 * of one fronted server's requests (`server_requests.ts`).
 */
export class TaskRuns implements TaskStore {
  readonly #store = new InMemoryTaskStore();
  readonly #runs = new Map<string, AbortController>();

  createTask(
    params: CreateTaskOptions,
    requestId: RequestId,
    request: Request,
    sessionId?: string,
  ): Promise<Task> {
    return this.#store.createTask(params, requestId, request, sessionId);
  }

  getTask(taskId: string, sessionId?: string): Promise<Task | null> {
    return this.#store.getTask(taskId, sessionId);
  }

  storeTaskResult(
    taskId: string,
    status: "completed" | "failed",
    result: Result,
    sessionId?: string,
  ): Promise<void> {
    return this.#store.storeTaskResult(taskId, status, result, sessionId);
  }

  getTaskResult(taskId: string, sessionId?: string): Promise<Result> {
    return this.#store.getTaskResult(taskId, sessionId);
  }

  async updateTaskStatus(
    taskId: string,
    status: Task["status"],
    statusMessage?: string,
    sessionId?: string,
  ): Promise<void> {
    await this.#store.updateTaskStatus(taskId, status, statusMessage, sessionId);
    if (status === "cancelled") this.#runs.get(taskId)?.abort(new Error("The task was cancelled"));
  }

  listTasks(cursor?: string, sessionId?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    return this.#store.listTasks(cursor, sessionId);
  }

  /** Every run stops (aborted with `reason`), every task is dropped. */
  close(reason: string): void {
    for (const run of this.#runs.values()) run.abort(new Error(reason));
    this.#runs.clear();
    this.#store.cleanup();
  }

  /** Runs `work` as the run of task `taskId` (aborted by its cancellation); settled, it is dropped. */
  track(taskId: string, run: AbortController, work: Promise<unknown>): void {
    this.#runs.set(taskId, run);
    work.finally(() => this.#runs.delete(taskId));
  }
}

/**
 * `execution.taskSupport` of one server's tools, as its last `tools/list` said (forgotten when it
 * says its tools changed). A server that declared no task support for `tools/call` runs none.
 */
export class TaskSupport {
  #known?: Map<string, string>;

  learn(tools: readonly Tool[]): void {
    const known = new Map<string, string>();
    for (const t of tools) {
      if (t.execution?.taskSupport) known.set(t.name, t.execution.taskSupport);
    }
    this.#known = known;
  }

  forget(): void {
    this.#known = undefined;
  }

  /**
   * Whether the call of `name` goes to the server as a task: always when its tool requires one
   * (a client that runs it as a plain call gets the task's result), when the client asked for one
   * and the tool allows it. `list` reads the server's tools when they are not known yet; only
   * then is the answer a promise, so a plain call of a server without tasks is not put off a tick.
   */
  asTask(
    capabilities: ServerCapabilities,
    name: string,
    clientAsked: boolean,
    list: () => Promise<unknown>,
  ): boolean | Promise<boolean> {
    if (!capabilities.tasks?.requests?.tools?.call) return false;
    if (this.#known) return this.#decide(name, clientAsked);
    return list().then(() => this.#decide(name, clientAsked));
  }

  #decide(name: string, clientAsked: boolean): boolean {
    const support = this.#known?.get(name);
    return support === "required" || (support === "optional" && clientAsked);
  }
}

/** Options of {@link callAsTask}. */
export interface TaskCallOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly onprogress?: ProgressReport;
  readonly task?: TaskCall;
  /** The server made its task (its id): what the server then sends about it is this call's. */
  readonly onServerTask?: (taskId: string) => void;
}

/**
 * Calls tool `name` as a task of the server and returns its result. The SDK's `callToolStream`
 * creates it, polls it (each status reported to `opts.task`) and fetches its result (a failed
 * task's own result when it has one); the caller's abort cancels the server's task.
 */
export async function callAsTask(
  client: Client,
  params: { name: string; arguments: Record<string, unknown> },
  opts: TaskCallOptions,
): Promise<CallToolResult> {
  const tasks = client.experimental.tasks;
  let taskId: string | undefined;
  let last: Task["status"] | undefined;
  const cancel = () => void (taskId && tasks.cancelTask(taskId).catch(() => {}));
  opts.signal?.addEventListener("abort", cancel, { once: true });
  try {
    const stream = tasks.callToolStream(params, CallToolResultSchema, {
      task: opts.task?.ttl !== undefined ? { ttl: opts.task.ttl } : {},
      timeout: opts.timeoutMs,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.onprogress ? { onprogress: opts.onprogress } : {}),
    });
    for await (const message of stream) {
      if (message.type === "taskCreated") {
        taskId = message.task.taskId;
        opts.onServerTask?.(taskId);
        if (opts.signal?.aborted) cancel();
        else opts.task?.started(message.task);
      } else if (message.type === "taskStatus") {
        last = message.task.status;
        if (!isTerminal(last)) opts.task?.status(last, message.task.statusMessage);
      } else if (message.type === "result") {
        return message.result as CallToolResult;
      } else {
        if (last === "failed" && taskId) {
          const result = await tasks.getTaskResult(taskId, CallToolResultSchema).catch(() => {});
          if (result) return result as CallToolResult;
        }
        throw message.error;
      }
    }
    throw new McpError(
      ErrorCode.InternalError,
      `The task of ${params.name} ended without a result`,
    );
  } finally {
    opts.signal?.removeEventListener("abort", cancel);
  }
}
