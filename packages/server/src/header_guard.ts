/**
 * `HeaderGuard`: the TCP front of `pml-server serve` that bounds how long a client may take to send
 * a request's headers, which `Deno.serve` does not (it has no header timeout: a client that opens
 * a connection and trickles headers, or sends none, holds it for ever).
 *
 * It accepts the connections on the public address and relays their bytes both ways to the real
 * `Deno.serve`, which listens on a Unix socket in a private folder. It reads just enough of what
 * the client sends to know where a request's headers end (the blank line), and keeps one deadline
 * per connection:
 *
 * - **headers**: from the connection's opening, or from the first byte of each next request, the
 *   headers must be complete within `headerTimeoutMs`; otherwise the client gets
 *   `408 request_timeout` and the connection is closed, and one client-error line is logged;
 * - **in a request**: no deadline here (the body has its own, `readBody` in `http.ts`; a call has
 *   its own timeouts);
 * - **idle**: once the server has answered, a kept-alive connection on which nothing comes is
 *   closed after `idleTimeoutMs`; an answer that ends the connection (`Connection: close`, as the
 *   server answers a request whose body it did not read whole) closes it once it is through.
 *
 * It does not parse HTTP beyond the end of headers: a pipelined request (sent before the answer to
 * the one before, which no MCP client or browser does) is timed as idle, not as headers.
 *
 * @module
 */

/** Options of {@link HeaderGuard.listen}. */
export interface HeaderGuardOptions {
  readonly hostname: string;
  readonly port: number;
  /** The Unix socket `Deno.serve` listens on. */
  readonly upstreamPath: string;
  /** Time for a request's headers to arrive, whole (ms). */
  readonly headerTimeoutMs: number;
  /** Time a kept-alive connection may stay unused (ms, default 65 000). */
  readonly idleTimeoutMs?: number;
  /** Where a client that ran out of time is reported. */
  readonly log: (line: string) => void;
}

/** What a connection is doing, for its deadline. */
type Phase = "headers" | "request" | "idle";

interface Guarded {
  readonly client: Deno.TcpConn;
  upstream?: Deno.UnixConn;
  phase: Phase;
  /** When the current phase runs out (`performance.now()`); `Infinity` in a request. */
  deadline: number;
  /** How many bytes of `\r\n\r\n` the last bytes matched. */
  matched: number;
  closed: boolean;
}

const CR = 13;
const LF = 10;
const TIMEOUT_BODY = JSON.stringify({
  error: "request_timeout",
  message: "The request headers did not arrive in time",
});
const TIMEOUT_RESPONSE = new TextEncoder().encode(
  "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n" +
    `content-length: ${TIMEOUT_BODY.length}\r\n\r\n${TIMEOUT_BODY}`,
);

/** See the module documentation. */
export class HeaderGuard {
  readonly #listener: Deno.TcpListener;
  readonly #options: HeaderGuardOptions;
  readonly #idleMs: number;
  readonly #connections = new Set<Guarded>();
  readonly #sweep: ReturnType<typeof setInterval>;
  readonly #accepting: Promise<void>;
  #closed: Promise<void> | undefined;

  private constructor(listener: Deno.TcpListener, options: HeaderGuardOptions) {
    this.#listener = listener;
    this.#options = options;
    this.#idleMs = options.idleTimeoutMs ?? 65_000;
    const every = Math.max(10, Math.min(1000, options.headerTimeoutMs / 4, this.#idleMs / 4));
    this.#sweep = setInterval(() => this.#expire(), every);
    this.#accepting = this.#accept();
  }

  /** Listens on `hostname:port` and relays to `upstreamPath`. */
  static listen(options: HeaderGuardOptions): HeaderGuard {
    const listener = Deno.listen({ hostname: options.hostname, port: options.port });
    return new HeaderGuard(listener, options);
  }

  /** The public address (the port, when 0 was asked). */
  get addr(): Deno.NetAddr {
    return this.#listener.addr;
  }

  /** Connections open now. */
  get size(): number {
    return this.#connections.size;
  }

  /**
   * Stops accepting. Connections in a request go on until the server behind has answered and
   * closed them (its graceful shutdown); idle ones and ones still sending headers are closed now.
   */
  close(): Promise<void> {
    return this.#closed ??= this.#close();
  }

  async #close(): Promise<void> {
    clearInterval(this.#sweep);
    this.#listener.close();
    await this.#accepting;
    for (const conn of this.#connections) {
      if (conn.phase !== "request") this.#drop(conn);
    }
  }

  async #accept(): Promise<void> {
    try {
      for await (const client of this.#listener) this.#relay(client);
    } catch { /* closed */ }
  }

  async #relay(client: Deno.TcpConn): Promise<void> {
    const conn: Guarded = {
      client,
      phase: "headers",
      deadline: performance.now() + this.#options.headerTimeoutMs,
      matched: 0,
      closed: false,
    };
    this.#connections.add(conn);
    try {
      conn.upstream = await Deno.connect({ transport: "unix", path: this.#options.upstreamPath });
    } catch {
      this.#drop(conn);
      return;
    }
    if (conn.closed) {
      this.#drop(conn);
      return;
    }
    await Promise.all([this.#fromClient(conn), this.#toClient(conn)]);
    this.#drop(conn);
  }

  /** Client → server, watching for the end of each request's headers. */
  async #fromClient(conn: Guarded): Promise<void> {
    const buffer = new Uint8Array(16 * 1024);
    try {
      for (;;) {
        const n = await conn.client.read(buffer);
        if (n === null) break;
        const bytes = buffer.subarray(0, n);
        if (conn.phase === "idle") {
          conn.phase = "headers";
          conn.matched = 0;
          conn.deadline = performance.now() + this.#options.headerTimeoutMs;
        }
        if (conn.phase === "headers" && endsHeaders(conn, bytes)) {
          conn.phase = "request";
          conn.deadline = Number.POSITIVE_INFINITY;
        }
        await writeAll(conn.upstream!, bytes);
      }
      await conn.upstream!.closeWrite();
    } catch {
      this.#drop(conn);
    }
  }

  /** Server → client; an answer makes the connection idle. */
  async #toClient(conn: Guarded): Promise<void> {
    const buffer = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await conn.upstream!.read(buffer);
        if (n === null) break;
        const bytes = buffer.subarray(0, n);
        const answering = conn.phase === "request";
        await writeAll(conn.client, bytes);
        if (answering && closesWhole(bytes)) break; // a whole answer that ends the connection
        if (conn.phase !== "headers") {
          conn.phase = "idle";
          conn.deadline = performance.now() + this.#idleMs;
        }
      }
    } catch { /* either side closed */ }
    this.#drop(conn);
  }

  /** Closes the connections whose phase ran out of time. */
  #expire(): void {
    const now = performance.now();
    for (const conn of this.#connections) {
      if (conn.deadline > now) continue;
      if (conn.phase === "headers") {
        const from = `${conn.client.remoteAddr.hostname}:${conn.client.remoteAddr.port}`;
        this.#options.log(
          `pml-server: client error: ${from} sent no complete request headers within ` +
            `${this.#options.headerTimeoutMs} ms: answered 408 request_timeout and closed the connection`,
        );
        // One small write; a client that does not read it loses it with the connection.
        conn.client.write(TIMEOUT_RESPONSE).catch(() => {}).finally(() => this.#drop(conn));
        conn.deadline = Number.POSITIVE_INFINITY;
      } else {
        this.#drop(conn);
      }
    }
  }

  #drop(conn: Guarded): void {
    this.#connections.delete(conn);
    if (conn.closed) return;
    conn.closed = true;
    for (const side of [conn.client, conn.upstream]) {
      try {
        side?.close();
      } catch { /* already closed */ }
    }
  }
}

/** Scans `bytes` for the `\r\n\r\n` that ends the headers, carrying a partial match over. */
function endsHeaders(conn: Guarded, bytes: Uint8Array): boolean {
  let matched = conn.matched;
  for (const byte of bytes) {
    if (byte === (matched % 2 === 0 ? CR : LF)) matched++;
    else matched = byte === CR ? 1 : 0;
    if (matched === 4) {
      conn.matched = 0;
      return true;
    }
  }
  conn.matched = matched;
  return false;
}

const DECODER = new TextDecoder();

/**
 * True when `bytes` hold a whole answer with `Connection: close` and a `Content-Length`. The
 * server says so when it answered before reading all of a request's body (a 408 of `readBody`,
 * a 401 before the body), and then keeps the socket open for the rest of that body: the guard
 * closes the connection once the answer is through.
 */
function closesWhole(bytes: Uint8Array): boolean {
  const head = DECODER.decode(bytes.subarray(0, Math.min(bytes.length, 4096)));
  const end = head.indexOf("\r\n\r\n");
  if (end < 0 || !/\r\nconnection: *close\r\n/i.test(head.slice(0, end + 2))) return false;
  const length = head.slice(0, end + 2).match(/\r\ncontent-length: *(\d+)\r\n/i);
  return length !== null && bytes.length >= end + 4 + Number(length[1]);
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let written = 0; written < bytes.length;) {
    written += await conn.write(bytes.subarray(written));
  }
}
