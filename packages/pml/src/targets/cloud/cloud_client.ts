import { Client } from "../../sdk/client.ts";
import { lazySchemaValidator } from "../../sdk/validation.ts";
import type { StreamableHTTPError } from "../../sdk/http_client.ts";
import {
  type HttpClientSdk,
  loadHttpClient as importHttpClient,
} from "../../sdk/load_http_client.ts";
import { type CallToolResult, ErrorCode, McpError, type Tool } from "../../sdk/types.ts";
import type { Transport } from "../../sdk/transport.ts";
import { errorMessage, PmlError } from "../../errors.ts";
import { ToolResultShape } from "../target.ts";
import { type PostSession, postToolCall, type StreamMessage } from "./call_post.ts";

/** The SDK's Streamable HTTP client, imported on the first connection (`load_http_client.ts`). */
let httpClient: HttpClientSdk | undefined;
async function loadHttpClient(): Promise<HttpClientSdk> {
  return httpClient ??= await importHttpClient();
}

/** An HTTP error status from the cloud (none can exist before the client was loaded). */
function isHttpError(err: unknown): err is StreamableHTTPError {
  return httpClient !== undefined && err instanceof httpClient.StreamableHTTPError;
}

/**
 * An open session: the SDK client (it opened the session and lists tools) and what a call posts
 * on it directly ({@link postToolCall}).
 */
interface Session {
  readonly client: Client;
  readonly post: () => PostSession;
}

/** The cloud's endpoint is stateless: no GET stream to open again in the background. */
const NO_RECONNECT = {
  maxRetries: 0,
  initialReconnectionDelay: 1000,
  maxReconnectionDelay: 1000,
  reconnectionDelayGrowFactor: 1,
};

/** Version reported to the cloud in `initialize` (kept in step with the package). */
const CLIENT_INFO = { name: "pml", version: "0.1.0" };

/** Options of {@link CloudClient}. */
export interface CloudClientOptions {
  readonly cloudUrl: string;
  readonly apiKey: string;
  /** Injected fetch (tests, instrumentation); default the global one. */
  readonly fetch?: typeof fetch;
  /** Bound on connecting (`initialize`) and on `tools/list` (default 10 s). */
  readonly timeoutMs?: number;
  /** Bound on one tool call, reset by progress notifications (default 60 s). */
  readonly callTimeoutMs?: number;
}

/** Per-call options: the BYOK header value (already encoded) and the client's signal/progress. */
export interface CloudCallOptions {
  readonly byok?: string;
  readonly signal?: AbortSignal;
  readonly onprogress?: (p: { progress: number; total?: number; message?: string }) => void;
  /** What the cloud sends about the call besides its progress and answer (`call_post.ts`). */
  readonly onmessage?: (message: StreamMessage) => void;
}

/**
 * One MCP session with the cloud (`POST {cloudUrl}/mcp`, Streamable HTTP through the SDK client).
 * Every request carries `Authorization: Bearer <key>` and `X-PML-Client: package`; a `tools/call`
 * also carries `X-PML-BYOK` when the caller passed one for that call. The session is opened on
 * first use, dropped when the cloud fails, and re-opened on the next call (a session the cloud no
 * longer knows, after a restart, is re-opened and the call retried once).
 */
export class CloudClient {
  readonly #opts: CloudClientOptions;
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #callTimeoutMs: number;
  /**
   * BYOK header values of the calls in flight, by tool name and arguments (the fetch wrapper only
   * sees the body; `pml:execute` needs keys that depend on its code), counted so that overlapping
   * identical calls share one entry.
   */
  readonly #byok = new Map<string, { value: string; calls: number }>();
  #session?: Promise<Session>;

  constructor(opts: CloudClientOptions) {
    this.#opts = opts;
    this.#fetch = opts.fetch ?? fetch;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#callTimeoutMs = opts.callTimeoutMs ?? 60_000;
  }

  get url(): string {
    return `${this.#opts.cloudUrl}/mcp`;
  }

  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** `tools/list` of the cloud (every page), bounded by `timeoutMs`. */
  async listTools(): Promise<Tool[]> {
    return await this.#withSession(async ({ client }) => {
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : {}, {
          timeout: this.#timeoutMs,
        });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    });
  }

  /** `tools/call` of the cloud tool `name`. Throws {@link PmlError} `CLOUD_*` on transport failure. */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    opts: CloudCallOptions = {},
  ): Promise<CallToolResult> {
    const key = opts.byok ? byokKey(name, args) : undefined;
    if (key) {
      const entry = this.#byok.get(key);
      if (entry) entry.calls++;
      else this.#byok.set(key, { value: opts.byok!, calls: 1 });
    }
    try {
      return await this.#withSession(async ({ client, post }) =>
        await postToolCall(post(), { name, arguments: args }, {
          byok: opts.byok,
          signal: opts.signal,
          timeoutMs: this.#callTimeoutMs,
          onprogress: opts.onprogress,
          onmessage: opts.onmessage,
        }) ??
          // Redirected: the SDK follows it within the origin. `request`, not `callTool`: see
          // ToolResultShape.
          await client.request(
            { method: "tools/call", params: { name, arguments: args } },
            ToolResultShape,
            {
              timeout: this.#callTimeoutMs,
              resetTimeoutOnProgress: true,
              signal: opts.signal,
              onprogress: opts.onprogress,
            },
          ) as CallToolResult
      );
    } finally {
      const entry = key ? this.#byok.get(key) : undefined;
      if (entry && --entry.calls === 0) this.#byok.delete(key!);
    }
  }

  /**
   * Opens the session now (if none is open or opening), so that it can overlap other work of a
   * call. Resolves to the reason it could not be opened (as the error a call would report), or
   * `undefined` when it is open: a caller then fails at once instead of waiting a second time.
   */
  async open(): Promise<PmlError | undefined> {
    const session = this.#session ??= this.#connect();
    try {
      await session;
      return undefined;
    } catch (err) {
      if (this.#session === session) this.#session = undefined;
      return this.#failure(err);
    }
  }

  /**
   * A Streamable HTTP transport to the cloud's relay of the registry http MCP `server`: its
   * resources, prompts and completions (`X-PML-Server: <server>`, docs/cloud.md). Every request
   * carries the API key, `X-PML-Client`, and `byok` (that server's declared keys) when given.
   */
  async serverTransport(server: string, byok?: string): Promise<Transport> {
    const { StreamableHTTPClientTransport } = await loadHttpClient();
    const relayed = (url: string | URL | Request, init: RequestInit = {}) => {
      const headers = new Headers(init.headers);
      headers.set("x-pml-server", server);
      if (byok) headers.set("x-pml-byok", byok);
      return this.#authorizedFetch(url, { ...init, headers });
    };
    return new StreamableHTTPClientTransport(new URL(this.url), {
      fetch: relayed,
      reconnectionOptions: NO_RECONNECT,
    });
  }

  /** Ends the session (best effort). */
  async close(): Promise<void> {
    const session = this.#session;
    this.#session = undefined;
    const open = await session?.catch(() => undefined);
    await open?.client.close().catch(() => {});
  }

  async #withSession<T>(run: (session: Session) => Promise<T>): Promise<T> {
    for (let attempt = 0;; attempt++) {
      const fresh = !this.#session;
      const session = this.#session ??= this.#connect();
      try {
        return await run(await session);
      } catch (err) {
        if (err instanceof McpError && !isTransportCode(err.code)) throw err;
        if (this.#session === session) this.#session = undefined;
        session.then((s) => s.client.close()).catch(() => {});
        // The cloud restarted and forgot our session: the call was not run, open a new one.
        const sessionLost = isHttpError(err) && err.code === 404;
        if (sessionLost && !fresh && attempt === 0) continue;
        throw this.#failure(err);
      }
    }
  }

  async #connect(): Promise<Session> {
    const { StreamableHTTPClientTransport, StreamableHTTPError } = await loadHttpClient();
    const transport = new StreamableHTTPClientTransport(new URL(this.url), {
      fetch: this.#authorizedFetch,
      // The standalone GET stream is not needed for tool calls: do not retry it in the background.
      reconnectionOptions: NO_RECONNECT,
    });
    const client = new Client(CLIENT_INFO, {
      capabilities: {},
      jsonSchemaValidator: lazySchemaValidator(),
    });
    client.onerror = () => {}; // failures surface on the request that hit them
    try {
      await client.connect(transport, { timeout: this.#timeoutMs });
      const headers = {
        authorization: `Bearer ${this.#opts.apiKey}`,
        "x-pml-client": "package",
      };
      const post = (): PostSession => ({
        url: this.url,
        sessionId: transport.sessionId,
        protocolVersion: transport.protocolVersion,
        headers,
        fetch: this.#fetch,
        httpError: (status, message) => new StreamableHTTPError(status, message),
      });
      return { client, post };
    } catch (err) {
      await transport.close().catch(() => {});
      throw err;
    }
  }

  /** Adds the PML headers, and bounds the wait for response headers of every POST/DELETE. */
  readonly #authorizedFetch = async (
    url: string | URL | Request,
    init: RequestInit = {},
  ): Promise<Response> => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${this.#opts.apiKey}`);
    headers.set("x-pml-client", "package");
    const byok = typeof init.body === "string" ? this.#byokFor(init.body) : undefined;
    if (byok) headers.set("x-pml-byok", byok);
    if ((init.method ?? "GET") === "GET") return await this.#fetch(url, { ...init, headers });
    const slow = new AbortController();
    const timer = setTimeout(
      () => slow.abort(new DOMException("no response headers", "TimeoutError")),
      this.#callTimeoutMs,
    );
    const signal = init.signal ? AbortSignal.any([init.signal, slow.signal]) : slow.signal;
    try {
      return await this.#fetch(url, { ...init, headers, signal });
    } finally {
      clearTimeout(timer);
    }
  };

  /** The BYOK value for a body that is one `tools/call` of a tool called with BYOK. */
  #byokFor(body: string): string | undefined {
    if (this.#byok.size === 0 || !body.includes('"tools/call"')) return undefined;
    try {
      const msg = JSON.parse(body);
      const name = msg?.method === "tools/call" ? msg.params?.name : undefined;
      return typeof name === "string"
        ? this.#byok.get(byokKey(name, msg.params.arguments ?? {}))?.value
        : undefined;
    } catch {
      return undefined;
    }
  }

  #failure(err: unknown): PmlError {
    const where = `the PML cloud at "${this.url}"`;
    if (isHttpError(err) && (err.code === 401 || err.code === 403)) {
      return new PmlError(
        "CLOUD_AUTH",
        `${where} refused the API key (HTTP ${err.code}): check PML_API_KEY (create one with \`pml-server keys create\` or on the platform)`,
        { cause: err },
      );
    }
    const timedOut = (err instanceof McpError && err.code === ErrorCode.RequestTimeout) ||
      (err instanceof DOMException && err.name === "TimeoutError");
    const reason = timedOut
      ? `did not answer within ${waitText(boundOf(err) ?? this.#callTimeoutMs)}`
      : isHttpError(err)
      ? `answered HTTP ${err.code}`
      : `is unreachable (${errorMessage(err)})`;
    return new PmlError(
      "CLOUD_UNREACHABLE",
      `${where} ${reason}. Local tools keep working; cloud tools work again once it is back.`,
      { cause: err },
    );
  }
}

/** The bound an SDK timeout error carries (`{ timeout }`: the session's or the call's). */
function boundOf(err: unknown): number | undefined {
  const timeout = err instanceof McpError
    ? (err.data as { timeout?: unknown } | undefined)?.timeout
    : undefined;
  return typeof timeout === "number" ? timeout : undefined;
}

/** A wait for a message: whole seconds from one second on ("10 s"), else milliseconds. */
function waitText(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
}

/** Key of a call's BYOK value: the same for the arguments and for their JSON round trip. */
function byokKey(name: string, args: unknown): string {
  return `${name}\n${JSON.stringify(args)}`;
}

/** JSON-RPC error codes that mean the connection, not the request, failed. */
function isTransportCode(code: number): boolean {
  return code === ErrorCode.RequestTimeout || code === ErrorCode.ConnectionClosed;
}
