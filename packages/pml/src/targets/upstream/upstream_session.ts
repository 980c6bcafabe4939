/**
 * One MCP session of `pml` with a server it fronts, whatever reaches it: a stdio child's pipes
 * (`ServerProcess`) or a remote server's HTTP (`connectRemote`). The targets keep only how they
 * start or reach their server; what the protocol carries (the handshake, `tools/list`, `tools/call`,
 * the server's own requests to its client) is here, once (ARCHITECTURE.md, "Upstream sessions").
 *
 * @module
 */
import { Client } from "../../sdk/client.ts";
import { lazySchemaValidator } from "../../sdk/validation.ts";
import type { Transport } from "../../sdk/transport.ts";
import type {
  CallToolResult,
  CompleteRequestParams,
  CompleteResult,
  GetPromptResult,
  LoggingLevel,
  Prompt,
  ReadResourceResult,
  Resource,
  ResourceTemplate,
  ServerCapabilities,
  Tool,
} from "../../sdk/types.ts";
import {
  GetPromptResultSchema,
  JSONRPCMessageSchema,
  ReadResourceResultSchema,
} from "../../sdk/types.ts";
import { TransportCalls } from "./transport_calls.ts";
import { answerServer, CLIENT_TASKS } from "./server_requests.ts";
import type { UpstreamCallOptions, VerifyTools } from "./call_options.ts";
import type { UpstreamHub } from "./upstream_hub.ts";
import { CallsInFlight } from "./calls_in_flight.ts";
import { blockWithPmlUris, namesResources, toPmlUri } from "./resource_uri.ts";
import { callAsTask, TaskRuns, TaskSupport } from "./upstream_tasks.ts";

export type { ProgressReport, ServerSample } from "./server_requests.ts";

export { type UpstreamCallOptions, upstreamCallOptions, type VerifyTools } from "./call_options.ts";

/**
 * See the module documentation. Concurrent calls share the session, multiplexed by JSON-RPC id;
 * `tools/call`, `resources/read` and `prompts/get` go on the transport through
 * {@link TransportCalls} (not the SDK's protocol layer, docs/speed.md rows 6a and surface-read),
 * everything else through the SDK `Client`.
 */
export class UpstreamSession {
  /** The namespace of the server (`private_mcps` key, registry name). */
  readonly server: string;
  readonly client: Client;
  readonly #calls: TransportCalls;
  /** The options of the calls in flight: who answers the server's requests. */
  readonly #inFlight: CallsInFlight;
  /** The last guard given to {@link UpstreamSession.verifyOnce}, run again on `list_changed`. */
  #guard?: { verify: VerifyTools; timeoutMs: number };
  #verified?: Promise<void>;
  /** {@link UpstreamSession.#verified} has resolved. */
  #verifiedOk = false;
  /** Which tools run as MCP tasks (`upstream_tasks.ts`). */
  readonly #taskSupport = new TaskSupport();

  readonly #transport: Transport;

  private constructor(
    server: string,
    client: Client,
    transport: Transport,
    inFlight: CallsInFlight,
  ) {
    this.server = server;
    this.client = client;
    this.#inFlight = inFlight;
    this.#calls = new TransportCalls(transport);
    this.#transport = transport;
  }

  /**
   * Runs the MCP handshake on `transport` and returns the session. Rejects as the SDK does (the
   * caller says what failed: a process that did not start, a URL not reached); the transport is
   * left to the caller to close.
   */
  static async open(
    server: string,
    transport: Transport,
    opts: { timeoutMs: number; hub?: UpstreamHub },
  ): Promise<UpstreamSession> {
    const taskStore = new TaskRuns();
    const client = new Client(
      { name: "pml", version: "0.1.0" },
      {
        capabilities: {
          sampling: { tools: {} },
          elicitation: { form: {}, url: {} },
          roots: {},
          // The server's elicitation and sampling as tasks (server_requests.ts).
          tasks: CLIENT_TASKS,
        },
        jsonSchemaValidator: lazySchemaValidator(),
        taskStore,
      },
    );
    // Filled in once the session object exists (the handlers need its tool guard).
    const opened: { session?: UpstreamSession } = {};
    const inFlight = new CallsInFlight();
    answerServer(client, server, {
      hub: opts.hub,
      inFlight,
      tasks: taskStore,
      toolsChanged: () => opened.session && opened.session.#toolsChanged(),
    });
    const onclose = client.onclose;
    client.onclose = () => {
      taskStore.close(`The MCP session with "${server}" closed`);
      onclose?.();
    };
    await client.connect(transport, { timeout: opts.timeoutMs });
    const session = opened.session = new UpstreamSession(server, client, transport, inFlight);
    const hub = opts.hub;
    if (hub) {
      const closed = hub.open({
        logs: session.capabilities.logging !== undefined,
        setLoggingLevel: (level) => session.setLoggingLevel(level, { timeoutMs: opts.timeoutMs }),
      });
      const onclose = client.onclose;
      client.onclose = () => {
        closed();
        onclose?.();
      };
    }
    return session;
  }

  get inFlight(): number {
    return this.#inFlight.count;
  }

  /** The server's `tools/list` (every page), definitions as it gave them. */
  listTools(timeoutMs: number): Promise<Tool[]> {
    return allPages(async (params) => {
      const page = await this.client.listTools(params, { timeout: timeoutMs });
      return { items: page.tools, next: page.nextCursor };
    }).then((tools) => {
      this.#taskSupport.learn(tools);
      return tools;
    });
  }

  /**
   * Runs `verify` on this session's tools once; a failed check is tried again next time.
   * `undefined` once it has passed (nothing to wait for).
   */
  verifyOnce(verify: VerifyTools, timeoutMs: number): Promise<void> | undefined {
    if (this.#guard?.verify !== verify) this.#guard = { verify, timeoutMs };
    if (this.#verifiedOk) return undefined;
    if (!this.#verified) {
      const verified = verify(() => this.listTools(timeoutMs));
      this.#verified = verified;
      verified.then(
        () => void (this.#verifiedOk = this.#verified === verified),
        () => void (this.#verified = undefined),
      );
    }
    return this.#verified;
  }

  /**
   * Calls tool `name` (the caller runs `opts.verify` first, through {@link UpstreamSession.verifyOnce}: the
   * process manager before it hands out the process, the remote target on its session). Fails as
   * the SDK's `Client` would (`call_errors.ts`); the target says what a failure means for its
   * server.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    opts: UpstreamCallOptions,
  ): Promise<CallToolResult> {
    this.#inFlight.start(opts);
    try {
      const params = { name, arguments: args };
      const decided = this.#taskSupport.asTask(
        this.capabilities,
        name,
        opts.task !== undefined,
        () => this.listTools(opts.timeoutMs),
      );
      const asTask = typeof decided === "boolean" ? decided : await decided;
      const result = asTask
        ? await callAsTask(this.client, params, {
          ...opts,
          onServerTask: (taskId) => this.#inFlight.ranAs(opts, taskId),
        })
        : await this.#calls.call(params, opts);
      // A resource the result names reads back through PML (resource_uri.ts).
      return namesResources(result.content)
        ? { ...result, content: result.content.map((b) => blockWithPmlUris(this.server, b)) }
        : result;
    } finally {
      this.#inFlight.end(opts, `The call of ${name} ended`);
    }
  }

  /**
   * Counts a call that runs elsewhere (a registry http MCP's, posted to the PML cloud) as one of
   * this session's calls in flight until the function returned is called: the server's requests
   * and log lines {@link UpstreamSession.deliver}ed meanwhile are answered under its options, as
   * for a call of the session's own.
   */
  adopt(opts: UpstreamCallOptions): () => void {
    this.#inFlight.start(opts);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#inFlight.end(opts, "The call ended");
    };
  }

  /**
   * Takes a message of the server that reached PML another way (the stream of a call the cloud
   * answered): checked as the SDK's transport checks what it reads, then handled as if the
   * session's transport had brought it, its answer sent on it. With `call` (the {@link
   * UpstreamSession.adopt}ed call whose stream brought it), a request or log line in it belongs to
   * that call, whatever other calls are in flight.
   */
  deliver(message: unknown, call?: UpstreamCallOptions): void {
    const parsed = JSONRPCMessageSchema.safeParse(message);
    if (!parsed.success) return;
    const handle = () => this.#transport.onmessage?.(parsed.data);
    if (call) this.#inFlight.deliver(call, handle);
    else handle();
  }

  /**
   * The server's tools changed (`notifications/tools/list_changed`): checked against their pins
   * again now and before the next call (a new or changed tool is withheld until a human approves
   * it, `tool_guard.ts`).
   */
  #toolsChanged(): void {
    this.#taskSupport.forget();
    this.#verifiedOk = false;
    this.#verified = undefined;
    const guard = this.#guard;
    if (guard) this.verifyOnce(guard.verify, guard.timeoutMs)?.catch(() => {});
  }

  /** What the server said it offers in its handshake. */
  get capabilities(): ServerCapabilities {
    return this.client.getServerCapabilities() ?? {};
  }

  /** `resources/list`, every page, the URIs PML's (`resource_uri.ts`). */
  listResources(timeoutMs: number): Promise<Resource[]> {
    return allPages(async (params) => {
      const page = await this.client.listResources(params, { timeout: timeoutMs });
      const items = page.resources.map((r) => ({ ...r, uri: toPmlUri(this.server, r.uri) }));
      return { items, next: page.nextCursor };
    });
  }

  /** `resources/templates/list`, every page, the templates PML's. */
  listResourceTemplates(timeoutMs: number): Promise<ResourceTemplate[]> {
    return allPages(async (params) => {
      const page = await this.client.listResourceTemplates(params, { timeout: timeoutMs });
      const items = page.resourceTemplates.map((t) => ({
        ...t,
        uriTemplate: toPmlUri(this.server, t.uriTemplate),
      }));
      return { items, next: page.nextCursor };
    });
  }

  /** `resources/read` of the server's own `uri`; the contents' URIs PML's. */
  async readResource(uri: string, opts: RequestBound): Promise<ReadResourceResult> {
    const result = await this.#calls.request(
      "resources/read",
      { uri },
      ReadResourceResultSchema,
      opts,
    );
    return {
      ...result,
      contents: result.contents.map((c) => ({ ...c, uri: toPmlUri(this.server, c.uri) })),
    };
  }

  async subscribe(uri: string, opts: RequestBound): Promise<void> {
    await this.client.subscribeResource({ uri }, bound(opts));
  }

  async unsubscribe(uri: string, opts: RequestBound): Promise<void> {
    await this.client.unsubscribeResource({ uri }, bound(opts));
  }

  /** `prompts/list`, every page, names as the server gave them. */
  listPrompts(timeoutMs: number): Promise<Prompt[]> {
    return allPages(async (params) => {
      const page = await this.client.listPrompts(params, { timeout: timeoutMs });
      return { items: page.prompts, next: page.nextCursor };
    });
  }

  /** `prompts/get`; a resource its messages name reads back through PML. */
  async getPrompt(
    name: string,
    args: Record<string, string> | undefined,
    opts: RequestBound,
  ): Promise<GetPromptResult> {
    const result = await this.#calls.request(
      "prompts/get",
      { name, ...(args ? { arguments: args } : {}) },
      GetPromptResultSchema,
      opts,
    );
    return {
      ...result,
      messages: result.messages.map((m) => ({
        ...m,
        content: blockWithPmlUris(this.server, m.content),
      })),
    };
  }

  /** `completion/complete`, its `ref` in the server's own terms. */
  complete(params: CompleteRequestParams, opts: RequestBound): Promise<CompleteResult> {
    return this.client.complete(params, bound(opts));
  }

  async setLoggingLevel(level: LoggingLevel, opts: RequestBound): Promise<void> {
    await this.client.setLoggingLevel(level, bound(opts));
  }

  async close(): Promise<void> {
    await this.client.close().catch(() => {});
  }
}

/** Every page of a list, following `nextCursor`. */
async function allPages<T>(
  page: (params: { cursor: string } | undefined) => Promise<{ items: T[]; next?: string }>,
): Promise<T[]> {
  const out: T[] = [];
  let cursor: string | undefined;
  do {
    const { items, next } = await page(cursor ? { cursor } : undefined);
    out.push(...items);
    cursor = next;
  } while (cursor);
  return out;
}

/** The bound of one request PML relays: its time and the client's cancellation. */
export interface RequestBound {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
}

function bound(opts: RequestBound): { timeout: number; signal?: AbortSignal } {
  return { timeout: opts.timeoutMs, ...(opts.signal ? { signal: opts.signal } : {}) };
}
