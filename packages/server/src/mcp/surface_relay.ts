/**
 * The rest of a registry `http` MCP's surface, beyond its tools: its resources (list, templates,
 * read), prompts (list, get) and completions, relayed to its remote server (docs/cloud.md,
 * "Resources, prompts and completions"). A POST to `/mcp` carrying `X-PML-Server: <namespace>` is
 * an MCP request to that one server: this endpoint answers `initialize` with what the server
 * offers of these (its own capabilities, logging, subscriptions and list changes among them), and
 * every other request by asking the server on the proxy's upstream session of this caller's key
 * and API key (`upstream_sessions.ts`). A GET carrying the header is the SSE stream of what the
 * server sends on that session outside a request ({@link relayStream}: "Outside a request").
 *
 * Nothing is renamed here: URIs and prompt names are the server's own, and the pml package puts
 * them under the server's namespace as it does for a server it fronts itself (docs/surface.md).
 * The caller's BYOK key goes only to the server that declares it, in the header its entry names;
 * every answer and error is scrubbed of it; a namespace that is not an `http` entry of the
 * registry, or a key the entry needs and the request lacks, is refused before anything is sent.
 *
 * @module
 */
import { redact, scrubbed } from "./byok.ts";
import type { ByokKeys } from "./byok.ts";
import { WebStandardStreamableHTTPServerTransport } from "./sdk/http_server.ts";
import { Server } from "./sdk/server.ts";
import {
  CompleteRequestSchema,
  CompleteResultSchema,
  EmptyResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  GetPromptResultSchema,
  ListPromptsRequestSchema,
  ListPromptsResultSchema,
  ListResourcesRequestSchema,
  ListResourcesResultSchema,
  ListResourceTemplatesRequestSchema,
  ListResourceTemplatesResultSchema,
  McpError,
  ReadResourceRequestSchema,
  ReadResourceResultSchema,
  type ServerCapabilities,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "./sdk/types.ts";
import { MAX_QUEUED, sseEvent } from "./call_stream.ts";
import { bareMessage } from "../../../pml/src/targets/call_errors.ts";
import type { CatalogSnapshot, CatalogTool } from "./tool_catalog.ts";
import type { UpstreamSessions, UpstreamTarget } from "./upstream_sessions.ts";

/** How often a GET stream carries a comment (ms). */
const KEEP_ALIVE_MS = 25_000;
const KEEP_ALIVE = new TextEncoder().encode(": keep-alive\n\n");

/** The header naming the registry http MCP a request is for. */
export const SERVER_HEADER = "x-pml-server";

/** What the relay needs of the endpoint. */
export interface RelayDeps {
  readonly sessions: UpstreamSessions;
  /** Where failures are reported (already scrubbed of keys). */
  readonly log: (line: string) => void;
  /** Upper bound of one relayed request (ms). */
  readonly timeoutMs: number;
}

/** The request of one HTTP request, for the server `namespace`. */
export interface RelayRequest {
  readonly request: Request;
  readonly parsedBody: unknown;
  readonly namespace: string;
  readonly snapshot: CatalogSnapshot;
  readonly keys: ByokKeys;
  /** The caller's API key id: the upstream session is its own. */
  readonly owner: string;
}

/**
 * Answers `req` for its server (see the module documentation); a refusal is a JSON-RPC error
 * with HTTP 403 (a key missing) or 404 (no such http MCP).
 */
export async function relaySurface(req: RelayRequest, deps: RelayDeps): Promise<Response> {
  const { namespace, keys } = req;
  const found = upstreamFor(req);
  if (found instanceof Response) return found;
  const { target, origin } = found;
  const failed = (error: unknown): Error => {
    const why = error instanceof McpError ? bareMessage(error) : (error as Error).message;
    const message = redact(`The MCP server "${namespace}" (${origin}) failed: ${why}`, keys);
    deps.log(`pml-server: ${message}`);
    // Its own answer keeps its code (an unknown resource stays -32002); the rest is internal.
    const code = error instanceof McpError ? error.code : ErrorCode.InternalError;
    return Object.assign(new Error(message), { code });
  };
  let offered: ServerCapabilities;
  try {
    offered = await deps.sessions.use(
      target,
      ({ client }) => Promise.resolve(client.getServerCapabilities() ?? {}),
    );
  } catch (error) {
    return refusal(502, failed(error).message);
  }
  // What the server sends outside a request comes on the GET stream (`relayStream`).
  const server = new Server({ name: namespace, version: "relay" }, {
    capabilities: {
      ...(offered.resources
        ? {
          resources: {
            ...(offered.resources.subscribe ? { subscribe: true } : {}),
            ...(offered.resources.listChanged ? { listChanged: true } : {}),
          },
        }
        : {}),
      ...(offered.prompts
        ? { prompts: offered.prompts.listChanged ? { listChanged: true } : {} }
        : {}),
      ...(offered.tools?.listChanged ? { tools: { listChanged: true } } : {}),
      ...(offered.completions ? { completions: {} } : {}),
      ...(offered.logging ? { logging: {} } : {}),
    },
  });
  /** One request passed on as it came, its answer checked by `schema` and scrubbed. */
  const relay = <T>(
    method: string,
    schema: { parse(value: unknown): T },
  ) =>
  async (request: { params?: unknown }, extra: { signal: AbortSignal }): Promise<T> => {
    try {
      const answer = await deps.sessions.use(target, ({ client }) =>
        client.request(
          { method, params: request.params as Record<string, unknown> | undefined },
          schema as never,
          { timeout: deps.timeoutMs, signal: extra.signal },
        ));
      return scrubbed(answer as T, keys);
    } catch (error) {
      throw failed(error);
    }
  };
  if (offered.resources) {
    server.setRequestHandler(
      ListResourcesRequestSchema,
      relay("resources/list", ListResourcesResultSchema),
    );
    server.setRequestHandler(
      ListResourceTemplatesRequestSchema,
      relay("resources/templates/list", ListResourceTemplatesResultSchema),
    );
    server.setRequestHandler(
      ReadResourceRequestSchema,
      relay("resources/read", ReadResourceResultSchema),
    );
    if (offered.resources.subscribe) {
      server.setRequestHandler(
        SubscribeRequestSchema,
        relay("resources/subscribe", EmptyResultSchema),
      );
      server.setRequestHandler(
        UnsubscribeRequestSchema,
        relay("resources/unsubscribe", EmptyResultSchema),
      );
    }
  }
  if (offered.logging) {
    server.setRequestHandler(SetLevelRequestSchema, relay("logging/setLevel", EmptyResultSchema));
  }
  if (offered.prompts) {
    server.setRequestHandler(
      ListPromptsRequestSchema,
      relay("prompts/list", ListPromptsResultSchema),
    );
    server.setRequestHandler(GetPromptRequestSchema, relay("prompts/get", GetPromptResultSchema));
  }
  if (offered.completions) {
    server.setRequestHandler(
      CompleteRequestSchema,
      relay("completion/complete", CompleteResultSchema),
    );
  }
  const transport = new WebStandardStreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  await server.connect(transport);
  try {
    return await transport.handleRequest(req.request, { parsedBody: req.parsedBody });
  } catch (error) {
    await server.close();
    throw error;
  }
}

/**
 * The GET stream of the caller's upstream session of its server (Streamable HTTP's stream of what a
 * server sends outside a request): its log lines, list changes and resource updates, scrubbed of
 * the caller's keys, first what came while no stream was open (`UpstreamSessions.listen`); the
 * session stays open while the stream does. Refused as {@link relaySurface} refuses, 429 past the
 * streams one session takes.
 */
export async function relayStream(req: RelayRequest, deps: RelayDeps): Promise<Response> {
  const found = upstreamFor(req);
  if (found instanceof Response) return found;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let stop: (() => void) | undefined;
  // A comment now and then: a caller gone away is seen at the next write, and its stream ended.
  const keepAlive = setInterval(() => {
    try {
      controller.enqueue(KEEP_ALIVE);
    } catch {
      end();
    }
  }, KEEP_ALIVE_MS);
  Deno.unrefTimer(keepAlive);
  const end = () => {
    clearInterval(keepAlive);
    stop?.();
  };
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
    cancel: end,
  });
  try {
    stop = await deps.sessions.listen(found.target, {
      send: (notification) => {
        // A caller that does not read: what does not fit is dropped.
        if ((controller.desiredSize ?? 0) <= -MAX_QUEUED) return;
        controller.enqueue(sseEvent(scrubbed(notification, req.keys)));
      },
      close: () => {
        end();
        try {
          controller.close();
        } catch { /* closed by the caller already */ }
      },
    });
  } catch (error) {
    clearInterval(keepAlive);
    const why = redact((error as Error).message, req.keys);
    deps.log(`pml-server: no stream of "${req.namespace}": ${why}`);
    return refusal(
      error instanceof RangeError ? 429 : 502,
      `No stream of "${req.namespace}": ${why}`,
    );
  }
  return new Response(body, {
    status: 200,
    headers: { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" },
  });
}

/**
 * The upstream session's target for `req`'s server and the caller's keys, or the refusal: 404 when
 * no http entry has that namespace, 403 when a key it needs is missing.
 */
function upstreamFor(req: RelayRequest): { target: UpstreamTarget; origin: string } | Response {
  const { namespace, keys } = req;
  const entry = req.snapshot.tools.find((t) =>
    t.kind === "http" && t.http && t.id.startsWith(`${namespace}:`)
  );
  if (!entry) {
    return refusal(
      404,
      `No HTTP MCP "${namespace.slice(0, 100)}" in this registry: X-PML-Server names the ` +
        `namespace of an http entry (see pml__search)`,
    );
  }
  const missing = entry.envRequired.filter((name) => !keys.has(name));
  if (missing.length) {
    return refusal(
      403,
      `API_KEY_REQUIRED: the MCP server "${namespace}" needs the API key ${missing.join(", ")}: ` +
        `pml sends it (X-PML-BYOK) when .pml.json "env" lists it and it is set`,
    );
  }
  return {
    target: upstreamOf(entry, keys, req.owner),
    origin: new URL(entry.http!.proxyTo).origin,
  };
}

/** The upstream of `entry` with this caller's key placed as the entry says. */
function upstreamOf(entry: CatalogTool, keys: ByokKeys, owner: string): UpstreamTarget {
  const http = entry.http!;
  const headers: Record<string, string> = {};
  if (http.byok) {
    headers[http.byok.header] = http.byok.format.replaceAll("{key}", keys.get(http.byok.env)!);
  }
  return { url: http.proxyTo, headers, owner };
}

function refusal(status: number, message: string): Response {
  return new Response(
    JSON.stringify({ jsonrpc: "2.0", error: { code: -32600, message }, id: null }),
    { status, headers: { "content-type": "application/json" } },
  );
}
