import type { Server } from "../sdk/server.ts";
import { type Extra, RequestFirstServer } from "../sdk/incoming.ts";
import { lazySchemaValidator } from "../sdk/validation.ts";
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  type CreateMessageResult,
  CreateMessageResultSchema,
  CreateMessageResultWithToolsSchema,
  type CreateTaskResult,
  ElicitResultSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Request,
  type ServerNotification,
} from "../sdk/types.ts";
import type { TaskCall } from "../targets/upstream/upstream_tasks.ts";
import { callAsTask, MAX_TASK_QUEUE, SessionTasks, TASK_CAPABILITIES } from "./task_calls.ts";
import { isPmlError } from "../errors.ts";
import { passedOn } from "../targets/call_errors.ts";
import type { ApprovalDecision, ApprovalRequest } from "../permission/approvals.ts";
import {
  DECISION_SCHEMA,
  ElicitationDeclinedByClient,
  ElicitationUnanswered,
  HUMAN_MIN_MS,
} from "../permission/elicitation.ts";
import type { CallChannel, Gateway } from "./gateway.ts";
import { serveSurface, SURFACE_CAPABILITIES } from "./surface_handlers.ts";

/** Package version, reported in `initialize`. */
export const PML_VERSION = "0.1.0";

const INSTRUCTIONS = "PML routes each tool call to local execution (your files, sandboxed to the " +
  "workspace) or to the PML server. Some calls need approval: when a result has " +
  '"status":"approval_required", ask the user and answer with pml__continue. When it says ' +
  '"approval_mode":"human", only the user can decide: tell them its workflow_id and that they ' +
  "run `pml approve <workflow_id>` (or `pml approvals --open`) in a terminal of the workspace, " +
  "then call pml__continue to get the result.";

/**
 * How long PML waits for the human to answer an elicitation before it falls back to
 * `approval_required`. Headless clients that declare elicitation but never answer it would
 * otherwise hold the call; agents' own tool-call timeouts are often one minute (Codex: 60 s).
 */
export const ELICITATION_TIMEOUT_MS = 45_000;

/** How long a sampling request relayed to the client may take (a human may review it there). */
export const SAMPLING_TIMEOUT_MS = 5 * 60_000;

const DECISIONS: readonly string[] = ["yes", "always", "no"];

/**
 * Asks one approval by `elicitation/create`. `accept` with a decision → that decision; `decline`
 * → `no` (the human refused), or {@link ElicitationDeclinedByClient} when it came back within
 * `humanMinMs` (still a no, but nobody was asked); `cancel`, a failed request, no answer within
 * {@link ELICITATION_TIMEOUT_MS}, or an `accept` without a valid decision → {@link
 * ElicitationUnanswered}: nobody decided, and the approval falls back to `approval_required`.
 */
async function elicitDecision(
  req: ApprovalRequest,
  sendRequest: (
    request: Request,
    schema: typeof ElicitResultSchema,
    options: { timeout: number },
  ) => Promise<{ action: string; content?: Record<string, unknown> }>,
  timeoutMs: number,
  clock: { now: () => number; humanMinMs: number },
): Promise<ApprovalDecision> {
  let answer: { action: string; content?: Record<string, unknown> };
  const asked = clock.now();
  try {
    answer = await sendRequest(
      {
        method: "elicitation/create",
        params: { message: req.description, requestedSchema: DECISION_SCHEMA },
      },
      ElicitResultSchema,
      { timeout: timeoutMs },
    );
  } catch (err) {
    const timedOut = err instanceof McpError && err.code === ErrorCode.RequestTimeout;
    throw new ElicitationUnanswered(timedOut ? "timeout" : "error", (err as Error).message);
  }
  if (answer.action === "decline") {
    const ms = Math.max(0, Math.round(clock.now() - asked));
    if (ms < clock.humanMinMs) throw new ElicitationDeclinedByClient(ms);
    return "no";
  }
  const decision = answer.content?.decision;
  if (answer.action === "accept" && DECISIONS.includes(decision as string)) {
    return decision as ApprovalDecision;
  }
  throw new ElicitationUnanswered(
    answer.action === "accept" ? "error" : "cancel",
    answer.action === "accept" ? `accepted without a decision` : undefined,
  );
}

/** Options of {@link createMcpServer}. */
export interface McpServerOptions {
  /** How long an elicitation may stay unanswered (default {@link ELICITATION_TIMEOUT_MS}). */
  readonly elicitationTimeoutMs?: number;
  /** A `decline` sooner than this is the client's, not a person's (default {@link HUMAN_MIN_MS}). */
  readonly humanMinMs?: number;
  /** The clock that times elicitations (default `performance.now`). */
  readonly now?: () => number;
}

/**
 * The MCP face of a {@link Gateway}: an SDK `Server` with `tools/list` and `tools/call`. One per
 * connection (stdio has one; `pml serve` makes one per session over the same gateway).
 */
export function createMcpServer(gateway: Gateway, opts: McpServerOptions = {}): Server {
  const elicitationTimeoutMs = opts.elicitationTimeoutMs ?? ELICITATION_TIMEOUT_MS;
  const clock = {
    now: opts.now ?? (() => performance.now()),
    humanMinMs: opts.humanMinMs ?? HUMAN_MIN_MS,
  };
  // The session's MCP tasks (task_calls.ts), answered by the SDK's own task handlers.
  const tasks = new SessionTasks();
  const server = new RequestFirstServer(
    { name: "pml", version: PML_VERSION },
    {
      capabilities: { tools: { listChanged: true }, ...SURFACE_CAPABILITIES, ...TASK_CAPABILITIES },
      instructions: INSTRUCTIONS,
      jsonSchemaValidator: lazySchemaValidator(),
      taskStore: tasks,
      taskMessageQueue: tasks.queue,
      maxTaskQueueSize: MAX_TASK_QUEUE,
    },
  );

  // The SDK's client ignores a cancellation of request id 0 (its `_oncancel` tests the id for
  // truth), and PML's first request to its client may be withdrawn (a fronted server's question
  // whose call ended, server_requests.ts): PML's ids start at 1 (a private field of the pinned
  // SDK's protocol layer).
  (server as unknown as { _requestMessageId: number })._requestMessageId = 1;

  // Resources, prompts, completions, log level (surface_handlers.ts): a read or a prompt get may
  // ask the human as a tool call does.
  // Notifications of fronted servers outside a call, once the client is there.
  server.oninitialized = () => {
    const detach = gateway.attachClient((n) => server.notification(n));
    const closed = server.onclose;
    server.onclose = () => {
      detach();
      closed?.();
    };
  };
  serveSurface(server, gateway.surface, (extra) => ({
    elicit: server.getClientCapabilities()?.elicitation
      ? (req) => elicitDecision(req, extra.sendRequest, elicitationTimeoutMs, clock)
      : undefined,
    signal: extra.signal,
  }));

  server.setRequestHandler(
    ListToolsRequestSchema,
    async () => ({ tools: await gateway.listTools() }),
  );

  const callTool = async (
    request: CallToolRequest,
    channel: CallChannel,
  ): Promise<CallToolResult> => {
    try {
      return await gateway.callTool(request.params.name, request.params.arguments, channel);
    } catch (err) {
      if (isPmlError(err, "UNKNOWN_TOOL")) {
        // Not an McpError: its constructor prefixes "MCP error -32602: " to the message, and the
        // client prefixes it again when it turns the JSON-RPC error into its own McpError.
        throw Object.assign(new Error(err.message), { code: ErrorCode.InvalidParams });
      }
      if (isPmlError(err, "TASK_UNSUPPORTED")) {
        throw Object.assign(new Error(err.message), { code: ErrorCode.MethodNotFound });
      }
      if (err instanceof McpError) {
        // An McpError from further away (the cloud's client): its message already carries the
        // prefix the client will add; send the bare message with the same code.
        throw passedOn(err);
      }
      throw err;
    }
  };
  server.setRequestHandler(
    CallToolRequestSchema,
    async (request, extra): Promise<CallToolResult | CreateTaskResult> => {
      const asked = request.params.task;
      if (!asked) {
        return await callTool(
          request,
          callChannel(server, request, extra.sendRequest, extra.sendNotification, {
            signal: extra.signal,
            elicitationTimeoutMs,
            clock,
          }),
        );
      }
      // As a task (task_calls.ts): once it exists, the call's questions wait for tasks/result.
      return await callAsTask(tasks, extra, asked, (task, signal, relay) => {
        const send: Send = (req, schema, options) => {
          const taskId = relay.taskId();
          if (!taskId) return extra.sendRequest(req, schema, options);
          relay.status("input_required");
          return server.request(req, schema, { ...options, relatedTask: { taskId } })
            .finally(() => relay.status("working"));
        };
        const notify = (n: ServerNotification) =>
          relay.taskId() ? server.notification(n) : extra.sendNotification(n);
        return callTool(
          request,
          callChannel(server, request, send, notify, {
            signal,
            elicitationTimeoutMs,
            clock,
            task,
          }),
        );
      });
    },
  );
  // A remote server's user signed in: its tools can be listed now.
  const unsubscribe = gateway.onToolsChanged(() => {
    server.sendToolListChanged().catch(() => {});
  });
  const closed = server.onclose;
  server.onclose = () => {
    unsubscribe();
    tasks.close("The MCP session closed");
    closed?.();
  };
  return server;
}

/** Sends a request to the client, on the request's own stream or for its task. */
type Send = Extra["sendRequest"];

/**
 * The {@link CallChannel} of one `tools/call`: what the client declared it can do, reached by
 * `send` and `notify` (the call's own stream, or its task's).
 */
function callChannel(
  server: Server,
  request: CallToolRequest,
  send: Send,
  notify: (n: ServerNotification) => Promise<void>,
  opts: {
    signal: AbortSignal;
    elicitationTimeoutMs: number;
    clock: { now: () => number; humanMinMs: number };
    task?: TaskCall;
  },
): CallChannel {
  const client = server.getClientCapabilities();
  const token = request.params._meta?.progressToken;
  const sampling = client?.sampling;
  return {
    elicit: client?.elicitation
      ? (req) => elicitDecision(req, send, opts.elicitationTimeoutMs, opts.clock)
      : undefined,
    // On the request's own stream (`pml serve`): the SDK relates it to this call.
    sample: sampling
      ? (params, o) =>
        send(
          { method: "sampling/createMessage", params },
          params.tools ? CreateMessageResultWithToolsSchema : CreateMessageResultSchema,
          {
            signal: o.signal,
            timeout: SAMPLING_TIMEOUT_MS,
            // The client's progress goes back to the MCP under its own token.
            ...(o.onprogress ? { onprogress: o.onprogress } : {}),
          },
        ) as Promise<CreateMessageResult>
      : undefined,
    sampleTools: sampling?.tools !== undefined,
    // A fronted server's own question, on this call's stream (labelled its, docs/surface.md).
    serverElicit: client?.elicitation
      ? async (params, signal) => {
        const url = params.mode === "url";
        if (url && !client?.elicitation?.url) return { action: "decline" };
        return await send(
          { method: "elicitation/create", params },
          ElicitResultSchema,
          { signal, timeout: SAMPLING_TIMEOUT_MS },
        );
      }
      : undefined,
    log: (params) => notify({ method: "notifications/message", params }),
    openUrl: client?.elicitation?.url
      ? {
        ask: async (url, message, elicitationId) =>
          (await send(
            {
              method: "elicitation/create",
              params: { mode: "url", url, message, elicitationId },
            },
            ElicitResultSchema,
            { timeout: opts.elicitationTimeoutMs },
          )).action as "accept" | "decline" | "cancel",
        done: (elicitationId) =>
          server.notification({
            method: "notifications/elicitation/complete",
            params: { elicitationId },
          }),
      }
      : undefined,
    signal: opts.signal,
    // This connection: a fronted server's question reaches this session's client only.
    clientSession: server,
    progress: token === undefined ? undefined : (progress, total, message) =>
      notify({
        method: "notifications/progress",
        params: { progressToken: token, progress, total, message },
      }),
    ...(opts.task ? { task: opts.task } : {}),
  };
}
