/**
 * The server's MCP endpoint (`POST /mcp`, Streamable HTTP, DESIGN §8/§10), in stateless mode
 * (JSON responses, no session id), so any number of server instances can answer any request. A
 * plain `tools/list` or `tools/call` (one request, the headers the SDK's transport requires) is
 * answered by one long-lived SDK `Server` through a {@link RequestTransport} that keeps each HTTP
 * request's ids and context apart; every other request gets a fresh `Server` and the SDK's
 * `WebStandardStreamableHTTPServerTransport`, which checks and answers it.
 *
 * Tools: `pml:search` (exposed `pml__search`), `pml:execute` (see `execute.ts`), the server-routed
 * std modules (`json`, `math`, `text`) and the tools of every `http` registry entry. `tools/call`
 * accepts the exposed name and the tool id. BYOK keys come from the request's `X-PML-BYOK` header
 * and serve that request only. `DELETE`, and a `GET` without `X-PML-Server`, answer 405: there is
 * no session. A request carrying `X-PML-Server: <namespace>` is for that http entry's own
 * resources, prompts and completions (`surface_relay.ts`), and a `GET` carrying it is the stream of
 * what that server sends outside a request (`relayStream`); its tools are listed here with
 * `_meta["pml/kind"]: "http"`, which tells the pml package which namespaces to ask.
 *
 * A `tools/call` of an http tool is answered on an SSE stream when its server sends something
 * about it before the result (progress, log lines, its own requests: `call_stream.ts`); the
 * caller's answers to those requests and its `notifications/cancelled` of a call in flight come
 * as POSTs of their own, matched by API key ({@link callerMessage}).
 *
 * The app has already checked the API key before calling this handler.
 *
 * @module
 */
import { parseJsonBody, readBody } from "../http.ts";
import type { McpHandler, McpRequestContext } from "../routes/mcp_post.ts";
import type { Store } from "../store/store.ts";
import { BYOK_HEADER, type ByokKeys, parseByokHeader } from "./byok.ts";
import type { RoutingTable } from "../registry/routing_table.ts";
import { callTool, isServerTool } from "./call_tool.ts";
import { CLIENT_HEADER, type ServerExecuteOptions, ServerExecutor } from "./execute.ts";
import { SEARCH_TOOL } from "./search.ts";
import { WebStandardStreamableHTTPServerTransport } from "./sdk/http_server.ts";
import { RequestFirstServer } from "../../../pml/src/sdk/incoming.ts";
import { lazySchemaValidator } from "../../../pml/src/sdk/validation.ts";
import {
  CallToolRequestSchema,
  isJSONRPCRequest,
  JSONRPCMessageSchema,
  type JSONRPCRequest,
  ListToolsRequestSchema,
  type RequestId,
  SUPPORTED_PROTOCOL_VERSIONS,
  type Tool,
} from "./sdk/types.ts";
import { type CatalogSnapshot, ToolCatalog } from "./tool_catalog.ts";
import { RequestTransport } from "./request_transport.ts";
import { UpstreamSessions } from "./upstream_sessions.ts";
import { relayStream, relaySurface, SERVER_HEADER } from "./surface_relay.ts";
import { CallStream, ServerRequests } from "./call_stream.ts";

/** Dependencies of {@link createMcpHandler}; only `store` is required. */
export interface McpHandlerDeps {
  readonly store: Store;
  /** fetch for upstream http MCP servers (default: the global `fetch`). */
  readonly fetch?: typeof fetch;
  /** Where proxy failures are reported, already free of BYOK keys (default `console.error`). */
  readonly log?: (line: string) => void;
  /** Largest MCP request body (default 1 MiB). */
  readonly maxBodyBytes?: number;
  /** How long an MCP request body may take to arrive (ms, default 30 000); then 408. */
  readonly bodyTimeoutMs?: number;
  /** Upper bound of one proxied call (ms, default 60 000). */
  readonly proxyTimeoutMs?: number;
  /** How long an idle upstream session of the http proxy stays open (ms, default 60 000). */
  readonly proxyIdleMs?: number;
  /** How long a built tool catalog is trusted before checking the registry version (ms). */
  readonly cacheTtlMs?: number;
  readonly now?: () => number;
  /** Platform routing, for tools the registry does not list (default: such tools are `client`). */
  readonly routing?: RoutingTable;
  /** `pml:execute`: timeouts and how many sandboxes may run at once. */
  readonly execute?: ServerExecuteOptions;
}

/**
 * The handler, plus `close()` for the sandboxes of `pml:execute` and the proxy's upstream sessions
 * (call it on shutdown).
 */
export type ClosableMcpHandler = McpHandler & {
  close(): Promise<void>;
  /** Ends the GET streams it holds open, so that a server's shutdown does not wait for them. */
  endStreams(): void;
};

const SERVER_INFO = { name: "pml-server", version: "0.1.0" };
const INSTRUCTIONS = "PML server: pml__search finds tools of the PML registry by intent; " +
  "json, math and text tools and HTTP API MCP tools run here.";

/**
 * Builds the MCP handler to pass as `createApp({ mcp })`.
 *
 * @example
 * ```ts
 * const app = createApp({ store, routing, mcp: createMcpHandler({ store }) });
 * ```
 */
export function createMcpHandler(deps: McpHandlerDeps): ClosableMcpHandler {
  const catalog = new ToolCatalog(deps.store, { ttlMs: deps.cacheTtlMs, now: deps.now });
  const log = deps.log ?? ((line: string) => console.error(line));
  const maxBodyBytes = deps.maxBodyBytes ?? 1024 * 1024;
  const proxyTimeoutMs = deps.proxyTimeoutMs ?? 60_000;
  const sessions = new UpstreamSessions({
    fetch: deps.fetch,
    timeoutMs: proxyTimeoutMs,
    idleMs: deps.proxyIdleMs,
  });
  const executor = new ServerExecutor({ ...deps.execute, routing: deps.routing });
  const execute = executor.tool;

  // The SDK's Server less its redundant parses: a result checked as it arrived (an upstream's,
  // `upstream_call.ts`) is not checked a second time (see RequestFirstServer).
  const newServer = () =>
    new RequestFirstServer(SERVER_INFO, {
      capabilities: { tools: { listChanged: false } },
      instructions: INSTRUCTIONS,
      // The SDK's default would build Ajv (~0.1 ms) for nothing.
      jsonSchemaValidator: lazySchemaValidator(),
    });
  /** Sets the tool handlers of `server`; `contextOf` gives the request's keys and catalog. */
  const serveTools = (
    server: RequestFirstServer,
    contextOf: (requestId: RequestId) => RequestContext,
  ) => {
    server.setRequestHandler(ListToolsRequestSchema, (_, extra) => ({
      tools: listedTools(contextOf(extra.requestId).snapshot, execute),
    }));
    server.setRequestHandler(CallToolRequestSchema, (call, extra) => {
      const { snapshot, keys, packageClient, owner, stream, signal } = contextOf(extra.requestId);
      const { name, arguments: args = {} } = call.params;
      if (name !== execute.id && name !== execute.name) {
        const caller = { owner, stream, signal };
        return callTool(name, args, { snapshot, keys, sessions, log, caller });
      }
      const callContext = { snapshot, keys, sessions, log, caller: { owner } };
      return executor.execute(args, {
        snapshot,
        packageClient,
        callTool: (id, nestedArgs) => callTool(id, nestedArgs, callContext),
        signal: extra.signal,
      });
    });
  };
  // One Server for the plain requests of every HTTP request (see request_transport.ts).
  const shared = newServer();
  const transport = new RequestTransport<RequestContext>();
  serveTools(shared, (requestId) => transport.context(requestId)!);
  const connected = shared.connect(transport);

  // The servers' requests waiting for a caller's answer, and the proxied calls in flight (by
  // caller and request id) that a `notifications/cancelled` of theirs stops.
  const requests = new ServerRequests();
  const inFlight = new Map<string, AbortController>();

  const handler = async (request: Request, context: McpRequestContext): Promise<Response> => {
    const namespace = request.headers.get(SERVER_HEADER);
    if (request.method === "GET" && namespace !== null) {
      // The stream of what that server sends outside a request (surface_relay.ts).
      const keys = parseByokHeader(request.headers.get(BYOK_HEADER));
      const snapshot = await catalog.snapshot();
      const owner = context.apiKey.id;
      const relayed = { request, parsedBody: undefined, namespace, snapshot, keys, owner };
      return await relayStream(relayed, { sessions, log, timeoutMs: proxyTimeoutMs });
    }
    if (request.method !== "POST") return methodNotAllowed();
    const keys = parseByokHeader(request.headers.get(BYOK_HEADER));
    const parsedBody = context.parsedBody ??
      await readJson(request, maxBodyBytes, deps.bodyTimeoutMs);
    if (parsedBody instanceof Response) return parsedBody;
    const owner = context.apiKey.id;
    const toCaller = callerMessage(parsedBody, owner, requests, inFlight);
    if (toCaller) return toCaller;
    const requestContext: RequestContext = {
      snapshot: await catalog.snapshot(),
      keys,
      packageClient: request.headers.get(CLIENT_HEADER)?.trim().toLowerCase() === "package",
      owner,
    };
    if (namespace !== null) {
      const relayed = { request, parsedBody, namespace, ...requestContext };
      return await relaySurface(relayed, { sessions, log, timeoutMs: proxyTimeoutMs });
    }
    const plain = plainRequest(request, parsedBody);
    if (plain) {
      await connected;
      const params = plain.params as { name?: unknown; _meta?: { progressToken?: unknown } };
      const proxied = plain.method === "tools/call" && typeof params?.name === "string" &&
        requestContext.snapshot.byName.get(params.name)?.kind === "http";
      if (proxied) {
        // What the server sends before its answer streams to the caller (call_stream.ts).
        const token = params._meta?.progressToken;
        const stream = new CallStream({
          keys,
          owner,
          requests,
          progressToken: typeof token === "string" || typeof token === "number" ? token : undefined,
        });
        const stop = new AbortController();
        const id = inFlightKey(owner, plain.id);
        inFlight.set(id, stop);
        const answering = transport.request(plain, {
          ...requestContext,
          stream,
          signal: stop.signal,
        })
          .finally(() => inFlight.get(id) === stop && inFlight.delete(id));
        return await stream.respond(answering);
      }
      const answer = await transport.request(plain, requestContext);
      return new Response(JSON.stringify(answer), {
        status: 200,
        headers: { "Content-Type": "application/json" },
      });
    }
    // Anything else (initialize, notifications, batches, a request the SDK's transport refuses)
    // gets a Server and the SDK's transport of its own, in stateless JSON mode.
    const server = newServer();
    serveTools(server, () => requestContext);
    const own = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(own);
    // No close() once answered: the JSON response is built only after every request of the body
    // has its answer, so no handler runs any more and the transport holds no stream; close() would
    // only abort the finished handlers' signals (a DOMException and an McpError per request, ~10%
    // of this endpoint's time). Server and transport are garbage once this returns.
    try {
      return await own.handleRequest(request, { parsedBody });
    } catch (error) {
      await server.close();
      throw error;
    }
  };
  const close = async () => {
    await Promise.all([executor.close(), sessions.close(), shared.close()]);
  };
  return Object.assign(handler, { close, endStreams: () => sessions.endStreams() });
}

/** What the tool handlers need of the HTTP request they answer. */
interface RequestContext {
  readonly snapshot: CatalogSnapshot;
  readonly keys: ByokKeys;
  /** The caller is the pml package (`X-PML-Client: package`). */
  readonly packageClient: boolean;
  /** The caller's API key id. */
  readonly owner: string;
  /** A proxied call's stream and cancellation (`call_stream.ts`). */
  readonly stream?: CallStream;
  readonly signal?: AbortSignal;
}

/**
 * A POST that is the caller's part of a proxied call, answered here: a JSON-RPC response (its
 * answer to a server's request, given to that server, 202; 404 when no request of this caller
 * waits under its id) or its `notifications/cancelled` of a call in flight (stopped, 202).
 * `undefined` for anything else.
 */
function callerMessage(
  body: unknown,
  owner: string,
  requests: ServerRequests,
  inFlight: Map<string, AbortController>,
): Response | undefined {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return undefined;
  const m = body as Record<string, unknown>;
  if (m.jsonrpc !== "2.0") return undefined;
  if (!("method" in m) && "id" in m && ("result" in m || "error" in m)) {
    if (requests.answer(owner, m)) return new Response(null, { status: 202 });
    return jsonRpcError(
      404,
      -32600,
      "No request of a server waits for this answer (answered already, ended, or unknown)",
    );
  }
  if (m.method !== "notifications/cancelled") return undefined;
  const params = m.params as { requestId?: unknown; reason?: unknown } | undefined;
  const stop = inFlight.get(inFlightKey(owner, params?.requestId));
  if (!stop) return undefined;
  stop.abort(typeof params?.reason === "string" ? params.reason : "cancelled by the client");
  return new Response(null, { status: 202 });
}

/** The key of a proxied call in flight: its caller and its request id (string or number). */
function inFlightKey(owner: string, id: unknown): string {
  return `${owner}\n${typeof id}\n${id}`;
}

/** Methods answered by the shared Server when they come alone in a request. */
const PLAIN_METHODS = new Set(["tools/list", "tools/call"]);

/**
 * The body's JSON-RPC request when the shared Server may answer it: one `tools/list` or
 * `tools/call` request (no batch), with the headers the SDK's transport requires (an `Accept` of
 * JSON and SSE, `Content-Type: application/json`, a supported `mcp-protocol-version` if any) and a
 * message its schema accepts. Anything else goes through the SDK's transport, which answers it or
 * refuses it with its own status and error.
 */
function plainRequest(request: Request, body: unknown): JSONRPCRequest | undefined {
  const method = (body as { method?: unknown } | null)?.method;
  if (typeof method !== "string" || !PLAIN_METHODS.has(method)) return undefined;
  const accept = request.headers.get("accept") ?? "";
  if (!accept.includes("application/json") || !accept.includes("text/event-stream")) return;
  if (request.headers.get("content-type") !== "application/json") return undefined;
  const version = request.headers.get("mcp-protocol-version");
  if (version !== null && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined;
  const parsed = JSONRPCMessageSchema.safeParse(body);
  return parsed.success && isJSONRPCRequest(parsed.data) ? parsed.data : undefined;
}

/** The tools of `tools/list`: `pml:search`, `pml:execute`, then the catalog's server tools. */
function listedTools(snapshot: CatalogSnapshot, execute: ServerExecutor["tool"]): Tool[] {
  return [
    {
      name: SEARCH_TOOL.name,
      title: SEARCH_TOOL.id,
      description: SEARCH_TOOL.description,
      inputSchema: SEARCH_TOOL.inputSchema,
      annotations: PURE_TOOL,
      _meta: meta(SEARCH_TOOL.id, []),
    },
    {
      name: execute.name,
      title: execute.id,
      description: execute.description,
      inputSchema: execute.inputSchema,
      _meta: meta(execute.id, []),
    },
    ...snapshot.tools.filter(isServerTool).map((tool): Tool => ({
      name: tool.name,
      title: tool.id,
      description: tool.description,
      inputSchema: tool.inputSchema as Tool["inputSchema"],
      ...(tool.kind === "std" ? { annotations: PURE_TOOL } : {}),
      _meta: tool.kind === "http"
        ? { ...meta(tool.id, tool.envRequired), "pml/kind": "http" }
        : meta(tool.id, tool.envRequired),
    })),
  ];
}

/**
 * MCP annotations of the tools this server computes in process (`pml:search` and the std modules
 * `json`, `math`, `text`: see `call_tool.ts`): they read only their arguments (and the catalog),
 * change nothing, give the same answer to the same arguments and reach nothing outside. Clients
 * act on them: Codex lets a read-only tool through without its own approval, Claude Code runs
 * read-only calls side by side. HTTP API tools (a third party's behaviour) and `pml:execute` get
 * none.
 */
export const PURE_TOOL: NonNullable<Tool["annotations"]> = Object.freeze({
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
});

/** `_meta` of a listed tool: its id, routing and the BYOK variables it needs. */
function meta(id: string, envRequired: readonly string[]): Record<string, unknown> {
  return { "pml/toolId": id, "pml/routing": "server", "pml/envRequired": envRequired };
}

/** Reads a bounded JSON body; a JSON-RPC parse error response when it is not JSON. */
async function readJson(
  request: Request,
  maxBodyBytes: number,
  timeoutMs?: number,
): Promise<unknown> {
  const body = parseJsonBody(await readBody(request, maxBodyBytes, timeoutMs));
  return body.ok ? body.value : jsonRpcError(400, -32700, `Parse error: ${body.error.message}`);
}

function methodNotAllowed(): Response {
  return jsonRpcError(
    405,
    -32000,
    "Method not allowed: this MCP endpoint is stateless (POST; a GET stream only of the server " +
      "X-PML-Server names; no session)",
    { allow: "POST" },
  );
}

function jsonRpcError(
  status: number,
  code: number,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}
