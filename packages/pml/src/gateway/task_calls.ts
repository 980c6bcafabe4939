/**
 * MCP tasks (SEP-1686) on PML's MCP face (docs/surface.md, "Tasks"). A `tools/call` the client asks
 * to run as a task goes through the gateway's pipeline like any call (permission, the question
 * asked on the call itself, audit); PML's own task is created once the fronted server created its
 * task (or the call ended first: a refusal, an `approval_required`, a tool that is no task), and
 * holds the call's result. Each MCP session has its own store, the SDK's `InMemoryTaskStore`, whose
 * `tasks/get`, `tasks/result`, `tasks/list` and `tasks/cancel` the SDK's protocol layer answers:
 * a task id is PML's (never the server's) and names a task of that session only.
 *
 * @module
 */
import { InMemoryTaskMessageQueue } from "../sdk/tasks.ts";
import type {
  CallToolResult,
  CreateTaskResult,
  ServerCapabilities,
  Task,
  TaskCreationParams,
} from "../sdk/types.ts";
import type { Extra } from "../sdk/incoming.ts";
import { type TaskCall, TaskRuns } from "../targets/upstream/upstream_tasks.ts";

/** What `initialize` says of tasks: `tools/call` as a task, listed and cancelled. */
export const TASK_CAPABILITIES: ServerCapabilities = {
  tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
};

/** A task's time to live when the client names none, and the longest kept (ms). */
const DEFAULT_TTL_MS = 5 * 60_000;
const MAX_TTL_MS = 60 * 60_000;

/** Messages (questions, log lines) a task may hold for its `tasks/result`. */
export const MAX_TASK_QUEUE = 100;

/**
 * The tasks of one MCP session: the SDK's in-memory store, and the run of each task, aborted
 * when the client cancels it (`tasks/cancel`, which the SDK's handler turns into a status) or the
 * session closes (`close("The MCP session closed")`).
 */
export class SessionTasks extends TaskRuns {
  /** Questions and log lines of a task, delivered by `tasks/result`. */
  readonly queue = new InMemoryTaskMessageQueue();
}

/** How a call run as a task reaches the client once its task exists. */
export interface TaskRelay {
  /** PML's task id, once created: the call's questions then wait for `tasks/result`. */
  readonly taskId: () => string | undefined;
  /** Sets the task's status (`input_required` while a question waits, then `working`). */
  readonly status: (status: Task["status"]) => void;
}

/**
 * Runs a `tools/call` that asked for a task (`asked`) and answers its `CreateTaskResult`. `call`
 * runs it through the gateway, given what the targets tell the task, the run's signal and the
 * relay. A failure before the task exists is the request's own (an unknown tool is `-32602`).
 */
export async function callAsTask(
  tasks: SessionTasks,
  extra: Extra,
  asked: TaskCreationParams,
  call: (task: TaskCall, signal: AbortSignal, relay: TaskRelay) => Promise<CallToolResult>,
): Promise<CreateTaskResult> {
  const store = extra.taskStore!;
  const run = new AbortController();
  const serverTask = Promise.withResolvers<Task>();
  /** PML's task, once created. */
  const ours: { taskId?: string } = {};
  const status = (status: Task["status"], message?: string) => {
    if (ours.taskId) store.updateTaskStatus(ours.taskId, status, message).catch(() => {});
  };
  const task: TaskCall = {
    ttl: ttlOf(asked.ttl),
    started: (t) => serverTask.resolve(t),
    status,
  };
  const signal = AbortSignal.any([extra.signal, run.signal]);
  const result = call(task, signal, { taskId: () => ours.taskId, status });
  const first = await Promise.race([serverTask.promise, result.then((r) => ({ result: r }))]);
  const started = "taskId" in first ? first : undefined;
  const created = await store.createTask({
    ttl: ttlOf(started?.ttl ?? asked.ttl),
    ...(started?.pollInterval !== undefined ? { pollInterval: started.pollInterval } : {}),
  });
  ours.taskId = created.taskId;
  const settled = result.then(
    (r) => store.storeTaskResult(created.taskId, r.isError ? "failed" : "completed", r),
    (err) => store.storeTaskResult(created.taskId, "failed", failure(err)),
  ).catch(() => {/* cancelled, expired or closed meanwhile: nothing to keep */});
  tasks.track(created.taskId, run, settled);
  if (!started) await settled;
  return { task: (await tasks.getTask(created.taskId)) ?? created };
}

function ttlOf(ttl: number | null | undefined): number {
  return Math.min(ttl ?? DEFAULT_TTL_MS, MAX_TTL_MS);
}

/** A call that failed after its task existed: the task's result says why. */
function failure(err: unknown): CallToolResult {
  return {
    content: [{ type: "text", text: err instanceof Error ? err.message : String(err) }],
    isError: true,
  };
}
