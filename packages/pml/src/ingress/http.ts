import type { Server } from "../sdk/server.ts";
import { type HttpServerSdk, loadHttpServer } from "../sdk/load_http_server.ts";
import { isInitializeRequest } from "../sdk/types.ts";
import { PmlError } from "../errors.ts";
import type { Gateway } from "../gateway/gateway.ts";
import { createMcpServer } from "../gateway/mcp_server.ts";
import { type AnswerModeTransport, answersInJson, loadAnswerModeTransport } from "./answer_mode.ts";

/** Options of {@link serveHttp}. */
export interface ServeHttpOptions {
  /** Port on 127.0.0.1 (`0`: any free port). */
  readonly port: number;
  /** Called once listening, with the endpoint URL (`http://127.0.0.1:PORT/mcp`). */
  readonly onListen?: (url: string) => void;
  /** Stops the server when aborted (the CLI aborts on SIGINT/SIGTERM). */
  readonly signal?: AbortSignal;
}

/** A running `pml serve`. */
export interface HttpIngress {
  readonly url: string;
  readonly port: number;
  /** Resolves once the server has stopped and the gateway is closed. */
  readonly finished: Promise<void>;
  /** Closes every session, stops listening, closes the gateway (sandboxes, subprocesses). */
  shutdown(): Promise<void>;
  /**
   * How many requests of the open sessions still hold a way back to the client (a POST waiting
   * for its answer, the SDK's entries for it): each ends when its answer is sent or the client
   * cancels it.
   */
  held(): number;
}

interface Session {
  readonly transport: AnswerModeTransport;
  readonly server: Server;
}

/**
 * Serves `gateway` over MCP Streamable HTTP on `127.0.0.1:PORT/mcp` (DESIGN §2): one SDK `Server`
 * per session over the shared gateway, so sessions run their calls concurrently. DNS-rebinding
 * protection is on: a `Host` other than `127.0.0.1:PORT` / `localhost:PORT`, or a browser `Origin`
 * other than those, is refused with 403 before anything else happens. A call is answered with plain
 * JSON when nothing else can go back on it, else with an SSE stream ({@link answersInJson}).
 * Resolves once listening (the SDK's HTTP server modules are imported first, here: nothing else
 * loads them, `sdk/load_http_server.ts`).
 *
 * @example
 * ```ts
 * const ingress = await serveHttp(gateway, { port: 3003, onListen: (url) => console.error(url) });
 * await ingress.finished;
 * ```
 */
export async function serveHttp(gateway: Gateway, opts: ServeHttpOptions): Promise<HttpIngress> {
  const sdk = await loadHttpServer();
  const AnswerModeTransport = await loadAnswerModeTransport();
  const sessions = new Map<string, Session>();
  let allowedHosts: string[] = [];
  let allowedOrigins: string[] = [];

  const handler = async (request: Request): Promise<Response> => {
    const refused = checkHostAndOrigin(request, allowedHosts, allowedOrigins);
    if (refused) return refused;
    const url = new URL(request.url);
    if (url.pathname !== "/mcp") {
      return jsonError(404, -32000, `Not found: ${url.pathname} (the MCP endpoint is /mcp)`);
    }
    const sessionId = request.headers.get("mcp-session-id");
    if (sessionId) {
      const session = sessions.get(sessionId);
      if (!session) return jsonError(404, -32001, `Session not found: "${sessionId}"`);
      if (request.method !== "POST" || !isJson(request)) {
        return await session.transport.handleRequest(request);
      }
      const read = await readJson(request, sdk);
      if (read instanceof Response) return read;
      const json = answersInJson(read.body, session.server.getClientCapabilities());
      return await session.transport.handlePost(request, read.body, json);
    }
    if (request.method !== "POST") {
      return jsonError(400, -32000, "Bad Request: Mcp-Session-Id header is required");
    }
    const read = await readJson(request, sdk);
    if (read instanceof Response) return read;
    const body = read.body;
    if (!isInitializeRequest(body)) {
      return jsonError(400, -32000, "Bad Request: no session; start with an initialize request");
    }
    const transport = new AnswerModeTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      enableDnsRebindingProtection: true,
      allowedHosts,
      allowedOrigins,
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, server });
      },
      onsessionclosed: (id) => {
        sessions.delete(id);
      },
    });
    const server = createMcpServer(gateway);
    server.onerror = (err) => console.error(`pml serve: ${err.message}`);
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    return await transport.handlePost(request, body, false);
  };

  let onListenUrl = "";
  const stop = new AbortController();
  let httpServer: Deno.HttpServer<Deno.NetAddr>;
  try {
    httpServer = Deno.serve({
      hostname: "127.0.0.1",
      port: opts.port,
      signal: stop.signal,
      onListen: () => {},
    }, handler);
  } catch (err) {
    if (!(err instanceof Deno.errors.AddrInUse)) throw err;
    throw new PmlError(
      "PORT_IN_USE",
      `Cannot listen on 127.0.0.1:${opts.port}: the port is in use (choose another with --port)`,
      { cause: err },
    );
  }
  const port = httpServer.addr.port;
  allowedHosts = [`127.0.0.1:${port}`, `localhost:${port}`];
  allowedOrigins = allowedHosts.map((h) => `http://${h}`);
  onListenUrl = `http://127.0.0.1:${port}/mcp`;
  opts.onListen?.(onListenUrl);

  let stopping: Promise<void> | undefined;
  const shutdown = () =>
    stopping ??= (async () => {
      const open = [...sessions.values()];
      sessions.clear();
      await Promise.allSettled(open.map((s) => s.server.close()));
      stop.abort();
      await httpServer.finished.catch(() => {});
      await gateway.close();
    })();
  opts.signal?.addEventListener("abort", () => void shutdown(), { once: true });
  return {
    url: onListenUrl,
    port,
    finished: httpServer.finished.then(() => stopping),
    shutdown,
    held: () => [...sessions.values()].reduce((n, s) => n + s.transport.held, 0),
  };
}

/** The DNS-rebinding check, done first for every request (known session or not). */
function checkHostAndOrigin(
  request: Request,
  hosts: readonly string[],
  origins: readonly string[],
): Response | undefined {
  const host = request.headers.get("host");
  if (!host || !hosts.includes(host)) {
    return jsonError(403, -32000, `Forbidden: Host "${host ?? ""}" is not allowed`);
  }
  const origin = request.headers.get("origin");
  if (origin !== null && !origins.includes(origin)) {
    return jsonError(403, -32000, `Forbidden: Origin "${origin}" is not allowed`);
  }
  return undefined;
}

/** A body the SDK reads as JSON (it answers any other with 415 itself). */
function isJson(request: Request): boolean {
  return request.headers.get("content-type")?.toLowerCase().startsWith("application/json") ??
    false;
}

/**
 * The body as JSON, read with the SDK's bound (4 MiB: 413 past it), or the error to answer. A body
 * with a `Content-Length` within the bound is read in one piece (the HTTP server delivers no more
 * than it declares); one without is read by the SDK's reader, which stops past the bound.
 */
async function readJson(
  request: Request,
  sdk: HttpServerSdk,
): Promise<{ body: unknown } | Response> {
  const bound = sdk.DEFAULT_MAX_REQUEST_BODY_SIZE;
  const length = request.headers.get("content-length");
  const read = length !== null && Number(length) <= bound
    ? { tooLarge: false as const, text: await request.text() }
    : await sdk.readRequestBody(request, bound);
  if (read.tooLarge) return jsonError(413, -32000, sdk.requestBodyTooLargeMessage(bound));
  try {
    return { body: JSON.parse(read.text) };
  } catch (err) {
    return jsonError(400, -32700, `Parse error: ${(err as Error).message}`);
  }
}

function jsonError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status });
}
