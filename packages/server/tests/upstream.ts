/**
 * Test upstreams for the http proxy: `@modelcontextprotocol/server-everything` in Streamable
 * HTTP mode on a loopback port, a recording proxy in front of it that keeps the headers of
 * every request it forwards, and the SDK's own server counting its sessions.
 */
import { join } from "node:path";
import { waitForLine } from "../../pml/src/testing/wait_for_line.ts";
import { WebStandardStreamableHTTPServerTransport } from "../src/mcp/sdk/http_server.ts";
import { Server } from "../src/mcp/sdk/server.ts";
import {
  CallToolRequestSchema,
  type ElicitRequestURLParams,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  UrlElicitationRequiredError,
} from "../src/mcp/sdk/types.ts";

const REPO = join(import.meta.dirname!, "../../..");
const EVERYTHING = join(REPO, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const LOOPBACK_ONLY = join(import.meta.dirname!, "fixtures/mcp/loopback_only.mjs");

/** A running upstream MCP server. */
export interface Upstream {
  /** `http://127.0.0.1:<port>/mcp` */
  readonly url: string;
  close(): Promise<void>;
}

/** Starts server-everything (`streamableHttp`) under Node on 127.0.0.1, any free port. */
export async function startEverything(): Promise<Upstream> {
  const child = new Deno.Command("node", {
    args: ["--import", LOOPBACK_ONLY, EVERYTHING, "streamableHttp"],
    env: { PORT: "0" },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const deadline = setTimeout(() => child.kill("SIGKILL"), 20_000);
  const listening = await waitForLine(child.stderr, /LOOPBACK_PORT=(\d+)$/m, "server-everything")
    .finally(() => clearTimeout(deadline));
  return {
    url: `http://127.0.0.1:${listening.match[1]}/mcp`,
    close: async () => {
      child.kill("SIGTERM");
      await child.status;
      await listening.rest;
    },
  };
}

/** A loopback HTTP proxy that forwards to `target` and records each request's headers. */
export function startRecordingProxy(target: string): Upstream & { readonly seen: Headers[] } {
  const seen: Headers[] = [];
  const targetUrl = new URL(target);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    seen.push(new Headers(request.headers));
    const url = new URL(request.url);
    url.protocol = targetUrl.protocol;
    url.host = targetUrl.host;
    const headers = new Headers(request.headers);
    headers.delete("host");
    return fetch(url, { method: request.method, headers, body: request.body });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    seen,
    close: () => server.shutdown(),
  };
}

/** What {@link startCountingUpstream} saw. */
export interface CountingUpstream extends Upstream {
  /** The `Authorization` header of each session's `initialize`, by session id. */
  readonly sessions: Map<string, string | null>;
  /** Each `tools/call`: its session and `Authorization` header. */
  readonly calls: { session: string; authorization: string | null }[];
  /** The sessions the client ended (`DELETE`), in order. */
  readonly deleted: string[];
  /** Ends every session on the server's side, as an upstream restart or expiry does. */
  dropSessions(): Promise<void>;
}

/**
 * The SDK's `Server` behind its Streamable HTTP transport in stateful mode (a session id per
 * `initialize`) on 127.0.0.1, any free port, with one tool `echo` that answers
 * `<message> (session <n>)`; it records every session and every call with its headers.
 *
 * A message starting with `fail` is answered with a JSON-RPC error that quotes the call's
 * `Authorization` header (a careless upstream); one starting with `signin` with the SDK's
 * `UrlElicitationRequiredError` (-32042) asking the user to open a URL (see {@link signInFor});
 * one starting with `hang` is answered only once the
 * call is cancelled (use it with `sse`: in JSON mode the SDK's transport never ends the HTTP
 * request of a cancelled call, and the server's shutdown would wait for it). With `sse`, answers
 * are SSE streams, and each call's stream first carries a log message and a progress notification
 * for another token.
 */
export function startCountingUpstream(options: { sse?: boolean } = {}): CountingUpstream {
  const sessions = new Map<string, string | null>();
  const transports = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const calls: CountingUpstream["calls"] = [];
  const deleted: string[] = [];
  const open = async (authorization: string | null) => {
    const server = new Server({ name: "counting", version: "0.0.0" }, {
      capabilities: { tools: {}, logging: {} },
    });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [] }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const session = extra.sessionId!;
      const authorization = extra.requestInfo?.headers.authorization as string;
      calls.push({ session, authorization });
      const message = String(request.params.arguments?.message);
      if (options.sse) {
        await extra.sendNotification({
          method: "notifications/message",
          params: { level: "info", data: `working on ${message}` },
        });
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: "another-call", progress: 1, total: 2 },
        });
      }
      if (message.startsWith("hang")) {
        await new Promise<void>((resolve) =>
          extra.signal.addEventListener("abort", () => resolve())
        );
        return { content: [{ type: "text", text: "cancelled" }] };
      }
      if (message.startsWith("signin")) {
        const signIn = signInFor(message, authorization);
        throw new UrlElicitationRequiredError(
          [signIn],
          message.includes("quoting") ? `Sign in first, ${authorization}` : undefined,
        );
      }
      if (message.startsWith("fail")) {
        throw new McpError(ErrorCode.InvalidParams, `refused with ${authorization}`);
      }
      const n = [...sessions.keys()].indexOf(session) + 1;
      return { content: [{ type: "text", text: `${message} (session ${n})` }] };
    });
    const transport: WebStandardStreamableHTTPServerTransport =
      new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        enableJsonResponse: !options.sse,
        onsessioninitialized: (id) => {
          sessions.set(id, authorization);
          transports.set(id, transport);
        },
      });
    await server.connect(transport);
    return transport;
  };
  const http = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const id = request.headers.get("mcp-session-id");
      const known = id === null ? undefined : transports.get(id);
      if (known && request.method === "DELETE") deleted.push(id!);
      if (known) return await known.handleRequest(request);
      if (id !== null) {
        return Response.json({
          jsonrpc: "2.0",
          error: { code: -32001, message: "Session not found" },
          id: null,
        }, {
          status: 404,
        });
      }
      if (request.method !== "POST") return new Response(null, { status: 405 });
      return await (await open(request.headers.get("authorization"))).handleRequest(request);
    },
  );
  const dropSessions = async () => {
    const ending = [...transports.values()];
    transports.clear();
    await Promise.all(ending.map((transport) => transport.close()));
  };
  return {
    url: `http://127.0.0.1:${http.addr.port}/mcp`,
    sessions,
    calls,
    deleted,
    dropSessions,
    close: async () => {
      await dropSessions();
      await http.shutdown();
    },
  };
}

/** The URL elicitation the counting upstream answers a call to `echo` with `message: "signin"`. */
export const SIGN_IN: ElicitRequestURLParams = Object.freeze({
  mode: "url",
  elicitationId: "counting-sign-in-1",
  url: "https://auth.example.com/sign-in?service=counting",
  message: "Sign in to counting to use its tools",
});

/**
 * The elicitation for a `signin…` message: {@link SIGN_IN}; with `quoting`, one whose id, URL
 * (percent-encoded, as a careless upstream builds a query) and message quote the call's
 * `Authorization` header; with `elsewhere`, one whose URL is a `file:` URL.
 */
function signInFor(message: string, authorization: string | null): ElicitRequestURLParams {
  if (message.includes("quoting")) {
    return {
      mode: "url",
      elicitationId: `sign-in-for ${authorization}`,
      url: `https://auth.example.com/sign-in?token=${encodeURIComponent(String(authorization))}`,
      message: `Sign in, holder of ${authorization}`,
    };
  }
  if (message.includes("elsewhere")) return { ...SIGN_IN, url: "file:///root/.ssh/id_ed25519" };
  return SIGN_IN;
}
