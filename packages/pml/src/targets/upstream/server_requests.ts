/**
 * What a fronted server asks of its client, PML, and what it tells it (docs/surface.md): its
 * sampling, elicitation and `roots/list` requests answered, its log lines, list changes and
 * resource updates passed on. A request or a log line during a call goes to the call it names
 * (by the server's task that call runs as) or came with (`CallsInFlight`), else to the oldest
 * call in flight that can take it, on that call's own stream, when every call in flight is of one
 * MCP session of PML's clients (over stdio nothing links it to its call; calls of one server
 * share its permissions). With calls of several sessions in flight nothing says whose it is: a request is
 * refused, so that it never reaches another session's client, and a log line goes to every client
 * as one outside a call does, through the {@link UpstreamHub}, within its bound. A question
 * relayed is withdrawn from the client (`notifications/cancelled`) when the server cancels it, or
 * its task, or when the call it was relayed for ends.
 *
 * @module
 */
import { basename } from "node:path";
import { pathToFileURL } from "node:url";
import type { Client } from "../../sdk/client.ts";
import type { RequestTaskStore } from "../../sdk/tasks.ts";
import {
  CancelledNotificationSchema,
  type CreateMessageRequest,
  CreateMessageRequestSchema,
  type CreateMessageResult,
  type CreateTaskResult,
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
  ErrorCode,
  ListRootsRequestSchema,
  type LoggingMessageNotification,
  LoggingMessageNotificationSchema,
  McpError,
  PromptListChangedNotificationSchema,
  RELATED_TASK_META_KEY,
  type RequestId,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  type Result,
  ToolListChangedNotificationSchema,
} from "../../sdk/types.ts";
import { isPmlError } from "../../errors.ts";
import { toPmlUri } from "./resource_uri.ts";
import type { UpstreamHub } from "./upstream_hub.ts";
import type { TaskRuns } from "./upstream_tasks.ts";
import type { CallInFlight, CallsInFlight } from "./calls_in_flight.ts";

/** Progress of a request, as the other side reports it. */
export type ProgressReport = (p: { progress: number; total?: number; message?: string }) => void;

/**
 * Answers one sampling request of the server (its cancellation arrives as `signal`; `onprogress`
 * is present when the server asked for progress with a token).
 */
export type ServerSample = (
  params: CreateMessageRequest["params"],
  signal: AbortSignal,
  onprogress?: ProgressReport,
) => Promise<CreateMessageResult>;

/** Relays one elicitation of the server to the client of a call (its words already labelled). */
export type ServerElicit = (
  params: ElicitRequest["params"],
  signal: AbortSignal,
) => Promise<ElicitResult>;

/** Relays one log line of the server to the client of a call (its logger labelled). */
export type ServerLog = (params: LoggingMessageNotification["params"]) => Promise<void>;

/** Who answers for a session: its calls in flight, the hub, and its tool guard. */
export interface ServerAnswers {
  readonly hub?: UpstreamHub;
  /** The session's calls in flight. */
  readonly inFlight: CallsInFlight;
  /** The session's tasks of the server's requests asked as tasks (its `taskStore`). */
  readonly tasks: TaskRuns;
  readonly toolsChanged: () => void;
}

/** Calls of several MCP sessions of PML's clients are in flight: see the module documentation. */
const AMBIGUOUS = Symbol("ambiguous");

/**
 * The call in flight that takes the server's `key` (its sampling, elicitation or log line, whose
 * `_meta` is `meta`): the one whose own stream brought it (`delivered`), if it is still in flight;
 * the one that runs as the server's task it names (`io.modelcontextprotocol/related-task`);
 * otherwise the oldest that can, when every call in flight is of one MCP session; {@link
 * AMBIGUOUS} when they are of several; `undefined` when no call can.
 */
function callFor(
  answers: ServerAnswers,
  key: "sample" | "elicit" | "log",
  meta?: Record<string, unknown>,
): CallInFlight | typeof AMBIGUOUS | undefined {
  const inFlight = answers.inFlight;
  const calls = inFlight.calls;
  const delivered = inFlight.delivered();
  if (delivered) return calls.has(delivered) && delivered[key] ? delivered : undefined;
  const related = (meta?.[RELATED_TASK_META_KEY] as { taskId?: unknown } | undefined)?.taskId;
  const ofTask = typeof related === "string" ? inFlight.ofTask(related) : undefined;
  if (ofTask) return ofTask[key] ? ofTask : undefined;
  let taker: CallInFlight | undefined;
  let first: CallInFlight | undefined;
  for (const c of calls) {
    first ??= c;
    if (c.clientSession !== first.clientSession) return AMBIGUOUS;
    if (!taker && c[key]) taker = c;
  }
  return taker;
}

/** The refusal of a request that could belong to the calls of several MCP sessions. */
function ambiguous(server: string, method: string): McpError {
  return new McpError(
    ErrorCode.InvalidRequest,
    `${method} of "${server}" is not relayed: calls of several MCP sessions of PML's clients ` +
      `run on "${server}" and nothing in the request says whose it is (it is never shown to ` +
      `another session's client); ask again once one session's calls run`,
  );
}

/**
 * The words that open every elicitation of a fronted server: it is that server's question, never
 * one of PML's approvals (which open "Allow …" and ask for a `decision`), whatever it says.
 */
export function elicitationLabel(server: string): string {
  return `[MCP server "${server}" asks; this is not a question of PML and approves nothing in PML] `;
}

/** Puts the handlers of the server's requests and notifications on `client`. */
export function answerServer(client: Client, server: string, answers: ServerAnswers): void {
  // The server's cancellations of its requests. The SDK's own handler ignores request id 0 (it
  // tests the id for truth), and a server's first request has id 0.
  const cancels = new Map<RequestId, AbortController>();
  client.setNotificationHandler(CancelledNotificationSchema, (n) => {
    if (n.params.requestId !== undefined) cancels.get(n.params.requestId)?.abort(n.params.reason);
  });
  answerSampling(client, server, answers, cancels);
  client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    const call = callFor(answers, "elicit", request.params._meta);
    if (call === AMBIGUOUS) throw ambiguous(server, "elicitation/create");
    const { task, ...asked } = request.params;
    const ask = async (signal: AbortSignal): Promise<ElicitResult> => {
      // Nobody to ask: no call of this server runs, or its client does not elicit.
      if (!call) return { action: "decline" };
      // Withdrawn once the call it is relayed for has ended.
      return await call.elicit!(
        { ...asked, message: elicitationLabel(server) + asked.message },
        AbortSignal.any([signal, answers.inFlight.ended(call)]),
      );
    };
    if (task) return await asTask(extra, answers.tasks, task, ask);
    const cancel = new AbortController();
    cancels.set(extra.requestId, cancel);
    try {
      return await ask(AbortSignal.any([extra.signal, cancel.signal]));
    } finally {
      cancels.delete(extra.requestId);
    }
  });
  client.setRequestHandler(ListRootsRequestSchema, () => {
    const workspace = answers.hub?.workspace;
    return {
      roots: workspace ? [{ uri: pathToFileURL(workspace).href, name: basename(workspace) }] : [],
    };
  });
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    const logger = n.params.logger ? `${server}/${n.params.logger}` : server;
    const params = { ...n.params, logger };
    const call = callFor(answers, "log", n.params._meta);
    if (!call || call === AMBIGUOUS) {
      return answers.hub?.broadcast(server, { method: "notifications/message", params });
    }
    if (answers.hub?.admit(server) ?? true) call.log!(params).catch(() => {});
  });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    answers.toolsChanged();
    answers.hub?.broadcast(server, { method: "notifications/tools/list_changed" });
  });
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
    answers.hub?.broadcast(server, { method: "notifications/resources/list_changed" });
  });
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => {
    answers.hub?.broadcast(server, { method: "notifications/prompts/list_changed" });
  });
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    answers.hub?.broadcast(server, {
      method: "notifications/resources/updated",
      params: { ...n.params, uri: toPmlUri(server, n.params.uri) },
    });
  });
}

/** The request without its progress token (the next hop gets its own), all else unchanged. */
function withoutProgressToken(
  params: CreateMessageRequest["params"],
): CreateMessageRequest["params"] {
  if (params._meta?.progressToken === undefined) return params;
  const { progressToken: _token, ...meta } = params._meta;
  const { _meta, ...rest } = params;
  return Object.keys(meta).length ? { ...rest, _meta: meta } : rest;
}

/** What PML says it can run as a task when a server it fronts asks (SEP-1686, that way). */
export const CLIENT_TASKS = {
  list: {},
  cancel: {},
  requests: { elicitation: { create: {} }, sampling: { createMessage: {} } },
};

/** A task of a server's request kept at most this long (ms), 10 min when it names no time. */
const MAX_TASK_TTL_MS = 60 * 60_000;
const TASK_TTL_MS = 10 * 60_000;

/**
 * A request the server asked PML to run as a task: answered with the task (in the session's
 * `taskStore`, whose `tasks/get`, `tasks/result` and `tasks/cancel` the SDK answers the server),
 * `answer` run after it, relayed as a plain request, its outcome the task's result; the relay is
 * withdrawn when the server cancels the task or its time to live runs out.
 */
async function asTask<R extends Result>(
  extra: { taskStore?: RequestTaskStore },
  runs: TaskRuns,
  task: { ttl?: number },
  answer: (signal: AbortSignal) => Promise<R>,
): Promise<CreateTaskResult> {
  const store = extra.taskStore;
  if (!store) throw new McpError(ErrorCode.InvalidRequest, "Tasks are not supported here");
  const ttl = Math.min(task.ttl ?? TASK_TTL_MS, MAX_TASK_TTL_MS);
  const created = await store.createTask({ ttl });
  const run = new AbortController();
  const settled = answer(AbortSignal.any([run.signal, AbortSignal.timeout(ttl)])).then(
    (result) => store.storeTaskResult(created.taskId, "completed", result),
    (err) =>
      store.updateTaskStatus(
        created.taskId,
        "failed",
        err instanceof Error ? err.message : String(err),
      ),
  ).catch(() => {/* cancelled or expired meanwhile */});
  runs.track(created.taskId, run, settled);
  return { task: created };
}

/**
 * The server's `sampling/createMessage`: answered by the call in flight that takes it
 * ({@link callFor}), its cancellation and progress relayed.
 */
function answerSampling(
  client: Client,
  server: string,
  answers: ServerAnswers,
  cancels: Map<RequestId, AbortController>,
): void {
  client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
    const call = callFor(answers, "sample", request.params._meta);
    if (call === AMBIGUOUS) throw ambiguous(server, "sampling/createMessage");
    if (!call) {
      throw new McpError(
        ErrorCode.InvalidRequest,
        `sampling/createMessage is answered only while a tool call of ${server} runs`,
      );
    }
    const cancel = new AbortController();
    cancels.set(extra.requestId, cancel);
    try {
      // The server's progress token is its own: progress from the model's side is sent back
      // under it (the hop to the client gets a token of PML's).
      const token = request.params._meta?.progressToken;
      const onprogress: ProgressReport | undefined = token === undefined
        ? undefined
        : (p) =>
          void extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, ...p },
          }).catch(() => {});
      const { task, ...asked } = withoutProgressToken(request.params);
      const sample = call.sample!;
      const ended = answers.inFlight.ended(call);
      if (task) {
        return await asTask(
          extra,
          answers.tasks,
          task,
          (signal) => sample(asked, AbortSignal.any([signal, ended])),
        );
      }
      const signal = AbortSignal.any([extra.signal, cancel.signal, ended]);
      return await sample(asked, signal, onprogress);
    } catch (err) {
      if (err instanceof McpError) throw err;
      // A PML refusal (denied, no key, …): the MCP gets it as its request's error.
      throw new McpError(
        isPmlError(err) ? ErrorCode.InvalidRequest : ErrorCode.InternalError,
        (err as Error).message,
      );
    } finally {
      cancels.delete(extra.requestId);
    }
  });
}
