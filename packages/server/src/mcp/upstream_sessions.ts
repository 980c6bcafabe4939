/**
 * The http proxy's upstream MCP sessions, reused from call to call: one SDK `Client` on a
 * `StreamableHTTPClientTransport` per (upstream URL, outgoing header set, caller's API key). The
 * header set holds the caller's BYOK key, so two users' keys never share a session, and a key
 * reaches only the session opened with it; what a server sends on a session outside a request
 * (its GET stream) goes to that caller's listeners alone ({@link UpstreamSessions.listen}).
 * Opening a session per call (`initialize`, `notifications/initialized`, the call, `DELETE`) cost
 * the upstream several times the call itself.
 *
 * The SDK `Client` opens the session (`initialize`, session id, protocol version); each
 * `tools/call` is then posted on it by `callOnSession` (`upstream_call.ts`).
 *
 * A session lives while it is used and `idleMs` after its last call; then it is ended (`DELETE`)
 * and its client closed, and with it the only copy of the key it held. Sessions are found by a
 * SHA-256 of their URL and headers, so no key is a map key. A session the upstream no longer knows
 * (404, as the Streamable HTTP transport answers an ended or expired session) is dropped and the
 * call made once more on a new one: the upstream did not run it. Any other transport failure or a
 * timeout drops the session without retrying the call (it may have run); an MCP error answered by
 * the upstream leaves the session as it is.
 *
 * @module
 */
import type { PostSession } from "../../../pml/src/targets/cloud/call_post.ts";
import type { CallStream } from "./call_stream.ts";
import { sha256Hex } from "../registry/hash.ts";
import { Client } from "./sdk/client.ts";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "./sdk/http_client.ts";
import { type CallToolResult, ErrorCode, type JSONRPCNotification, McpError } from "./sdk/types.ts";
import { callOnSession } from "./upstream_call.ts";

/** Settings of {@link UpstreamSessions}. */
export interface UpstreamSessionOptions {
  /** fetch used for upstream requests (default: the global `fetch`). */
  readonly fetch?: typeof fetch;
  /** Upper bound of the `initialize` and of one call (ms). */
  readonly timeoutMs: number;
  /** How long an unused session is kept open (ms, default 60 000). */
  readonly idleMs?: number;
  /** Most sessions kept at once; past it the least recently used idle one is ended (default 256). */
  readonly maxSessions?: number;
}

/** Where an upstream is reached, and with which headers. */
export interface UpstreamTarget {
  readonly url: string;
  /** Every header the upstream must see (the BYOK header among them). */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Whose session it is (the caller's API key id): what the server sends on it outside a request
   * (a log line, a list change, a resource update) reaches that caller alone.
   */
  readonly owner?: string;
}

/** One upstream tool call: where, with which headers, what. */
export interface UpstreamCall extends UpstreamTarget {
  readonly name: string;
  readonly args: Record<string, unknown>;
  /** The caller's cancellation of the call (sent upstream as `notifications/cancelled`). */
  readonly signal?: AbortSignal;
  /** Where what the server sends about the call goes (absent: its requests are refused). */
  readonly stream?: CallStream;
}

/** A session once `initialize` is done: its SDK client, and what a call posts on it. */
export interface OpenSession {
  readonly client: Client;
  readonly post: PostSession;
}

/** Takes what a server sends on its session outside a request (`listen`). */
export interface SessionListener {
  send(notification: JSONRPCNotification): void;
  /** The session ended: nothing more comes. */
  close(): void;
}

/** Listeners of one session at the most. */
export const MAX_LISTENERS = 8;
/** Streams of one caller (API key) at once, over all its sessions. */
export const MAX_STREAMS_PER_OWNER = 32;
/** Notifications kept for the first listener while none listens (older ones are dropped). */
export const MAX_KEPT = 64;

interface Session {
  readonly client: Promise<OpenSession>;
  readonly transport: StreamableHTTPClientTransport;
  /** Who gets what the server sends outside a request, and what waits for the first of them. */
  readonly listeners: Set<SessionListener>;
  kept: JSONRPCNotification[];
  calls: number;
  /** When the last call ended (`performance.now()`). */
  idleSince: number;
  /** Armed once the session is idle; when it fires early (a call came since), it is set again. */
  idle?: ReturnType<typeof setTimeout>;
  ended?: Promise<void>;
}

/**
 * The pool. `close()` ends every session (call it on shutdown).
 *
 * @example
 * ```ts
 * const sessions = new UpstreamSessions({ timeoutMs: 60_000 });
 * const result = await sessions.callTool({ url, headers, name: "search", args: { q: "mcp" } });
 * await sessions.close();
 * ```
 */
export class UpstreamSessions {
  readonly #options: UpstreamSessionOptions;
  readonly #sessions = new Map<string, Session>();
  /** Streams of `listen` open, by caller. */
  readonly #streams = new Map<string, number>();

  constructor(options: UpstreamSessionOptions) {
    this.#options = options;
  }

  /** Number of sessions open now. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Calls the tool on a session for `call.url` and `call.headers` (opened if none is).
   *
   * @throws whatever the transport or the upstream threw, once a session the upstream had ended
   * was replaced and the call made on the new one.
   */
  callTool(call: UpstreamCall): Promise<CallToolResult> {
    return this.use(call, (open) => callOnSession(open, call, this.#options.timeoutMs));
  }

  /**
   * Runs `run` on the session for `target` (opened if none is), under the pool's rules: a session
   * the upstream no longer knows is replaced and `run` made once more; any other failure but the
   * upstream's own answer drops the session. The relay of a server's resources, prompts and
   * completions (`surface_relay.ts`) uses it as `callTool` does.
   *
   * @throws whatever `run`, the transport or the upstream threw.
   */
  async use<T>(target: UpstreamTarget, run: (open: OpenSession) => Promise<T>): Promise<T> {
    const id = sessionId(target);
    for (let attempt = 0;; attempt++) {
      const reused = this.#sessions.has(id);
      const session = this.#session(id, target);
      session.calls++;
      try {
        return await run(await session.client);
      } catch (error) {
        if (!answeredByUpstream(error)) this.#end(id, session);
        if (attempt === 0 && reused && sessionGone(error)) continue;
        throw error;
      } finally {
        this.#release(id, session);
      }
    }
  }

  /**
   * Passes what the server of `target` sends outside a request (its log lines, list changes,
   * resource updates) to `listener`, first what came while nobody listened (at most
   * {@link MAX_KEPT}); the session stays open while listened to. The function returned stops it.
   *
   * @throws {RangeError} past {@link MAX_LISTENERS} listeners of the session or
   * {@link MAX_STREAMS_PER_OWNER} of the caller (each holds a session open); whatever opening the
   * session threw.
   */
  async listen(target: UpstreamTarget, listener: SessionListener): Promise<() => void> {
    const owner = target.owner ?? "";
    const streams = this.#streams.get(owner) ?? 0;
    if (streams >= MAX_STREAMS_PER_OWNER) {
      throw new RangeError(`more than ${MAX_STREAMS_PER_OWNER} streams of one API key`);
    }
    const id = sessionId(target);
    const session = this.#session(id, target);
    if (session.listeners.size >= MAX_LISTENERS) {
      throw new RangeError(`more than ${MAX_LISTENERS} streams of one upstream session`);
    }
    session.calls++;
    this.#streams.set(owner, streams + 1);
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      session.listeners.delete(listener);
      const left = (this.#streams.get(owner) ?? 1) - 1;
      if (left > 0) this.#streams.set(owner, left);
      else this.#streams.delete(owner);
      this.#release(id, session);
    };
    try {
      await session.client;
    } catch (error) {
      this.#end(id, session);
      stop();
      throw error;
    }
    session.listeners.add(listener);
    for (const notification of session.kept.splice(0)) listener.send(notification);
    return stop;
  }

  /** One use of the session ended: when it was the last, the session may end once idle. */
  #release(id: string, session: Session): void {
    session.calls--;
    if (session.calls === 0 && this.#sessions.get(id) === session) {
      session.idleSince = performance.now();
      session.idle ??= this.#endWhenIdle(id, session, this.#idleMs);
    }
  }

  /** Ends every stream of {@link UpstreamSessions.listen} (a server shutting down), not the sessions. */
  endStreams(): void {
    for (const session of this.#sessions.values()) {
      for (const listener of [...session.listeners]) listener.close();
    }
  }

  /** Ends every session. */
  async close(): Promise<void> {
    const ending = [...this.#sessions].map(([id, session]) => this.#end(id, session));
    await Promise.all(ending);
  }

  #session(id: string, call: UpstreamTarget): Session {
    const found = this.#sessions.get(id);
    if (found) {
      this.#sessions.delete(id); // re-inserted last: the map's order is least recently used first
      this.#sessions.set(id, found);
      return found;
    }
    this.#makeRoom();
    const headers = { ...call.headers };
    const transport = new StreamableHTTPClientTransport(new URL(call.url), {
      requestInit: { headers },
      ...(this.#options.fetch ? { fetch: this.#options.fetch } : {}),
    });
    // The server may ask its client during a call: the caller answers (call_stream.ts).
    const client = new Client({ name: "pml-server", version: "0.1.0" }, {
      capabilities: { sampling: {}, elicitation: { form: {}, url: {} } },
    });
    const connected = client.connect(transport, { timeout: this.#options.timeoutMs })
      .then(() => ({
        client,
        post: {
          url: call.url,
          sessionId: transport.sessionId,
          protocolVersion: transport.protocolVersion,
          headers,
          fetch: this.#options.fetch ?? fetch,
          httpError: (status: number, message: string) => new StreamableHTTPError(status, message),
        },
      }));
    connected.catch(() => {}); // the caller awaiting it sees the failure
    const session: Session = {
      client: connected,
      transport,
      listeners: new Set(),
      kept: [],
      calls: 0,
      idleSince: 0,
    };
    // Its requests outside a tool call (on its GET stream, or about a relayed request) have nobody
    // to ask: refused, as a brought server's are outside its calls (docs/cloud.md).
    client.fallbackRequestHandler = (request) =>
      Promise.reject(
        new McpError(
          ErrorCode.InvalidRequest,
          `${request.method} is passed on to the user only during a tool call of this server`,
        ),
      );
    // What the server sends outside a request (on its GET stream, or about a relayed request).
    client.fallbackNotificationHandler = (notification) => {
      const message = { jsonrpc: "2.0" as const, ...notification };
      if (session.listeners.size === 0) {
        session.kept.push(message);
        if (session.kept.length > MAX_KEPT) session.kept.shift();
      }
      for (const listener of session.listeners) listener.send(message);
      return Promise.resolve();
    };
    this.#sessions.set(id, session);
    return session;
  }

  #makeRoom(): void {
    const max = this.#options.maxSessions ?? 256;
    if (this.#sessions.size < max) return;
    for (const [id, session] of this.#sessions) {
      if (session.calls > 0) continue;
      this.#end(id, session);
      return;
    }
  }

  get #idleMs(): number {
    return this.#options.idleMs ?? 60_000;
  }

  /**
   * Ends the session once it has been idle for `idleMs`. One timer per idle period rather than one
   * set and cleared around every call: when it fires after calls came, it is set for the rest.
   */
  #endWhenIdle(id: string, session: Session, delay: number): ReturnType<typeof setTimeout> {
    const idle = setTimeout(() => {
      session.idle = undefined;
      if (this.#sessions.get(id) !== session || session.calls > 0) return; // the last call re-arms
      const left = session.idleSince + this.#idleMs - performance.now();
      if (left > 0) session.idle = this.#endWhenIdle(id, session, left);
      else void this.#end(id, session);
    }, delay);
    Deno.unrefTimer(idle);
    return idle;
  }

  /** Forgets the session and ends it upstream (`DELETE`) in the background. */
  #end(id: string, session: Session): Promise<void> {
    clearTimeout(session.idle);
    if (this.#sessions.get(id) === session) this.#sessions.delete(id);
    for (const listener of session.listeners) listener.close();
    session.listeners.clear();
    session.kept = [];
    session.ended ??= (async () => {
      const client = (await session.client.catch(() => undefined))?.client;
      await session.transport.terminateSession().catch(() => {});
      await (client ?? session.transport).close().catch(() => {});
    })();
    return session.ended;
  }
}

/** The map key of a session: a digest, so that no key value is kept as one. */
function sessionId(call: UpstreamTarget): string {
  const headers = Object.entries(call.headers)
    .map(([name, value]) => [name.toLowerCase(), value])
    .sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0);
  return sha256Hex(JSON.stringify([call.url, headers, call.owner ?? null]));
}

/** An error the upstream answered on a working session (a JSON-RPC error of the call). */
function answeredByUpstream(error: unknown): boolean {
  return error instanceof McpError && error.code !== ErrorCode.RequestTimeout &&
    error.code !== ErrorCode.ConnectionClosed;
}

/** The upstream no longer knows the session (Streamable HTTP answers 404). */
function sessionGone(error: unknown): boolean {
  return error instanceof StreamableHTTPError && error.code === 404;
}
