/**
 * The network wall of a sandbox with `sandbox.net` grants (DESIGN §13 "Sandbox model"): the
 * sandbox keeps its own empty network namespace, and the only way out is this proxy, which runs
 * in `pml` (outside the sandbox) and listens on two unix sockets bound into it: an HTTP proxy
 * (`CONNECT host:port` for HTTPS and any TCP, absolute-form requests for plain HTTP) and a SOCKS5
 * proxy (`CONNECT` only). Each connection names its destination; the proxy opens it only when the
 * name (as written, never resolved first) and the port match a grant, so a grant of
 * `127.0.0.1:8080` reaches that one port of the host's loopback and nothing else.
 *
 * @module
 */
import { PmlError } from "../errors.ts";

/** One `sandbox.net` entry: a host, and a port when it names one (else every port). */
export interface NetGrant {
  readonly host: string;
  readonly port?: number;
}

/**
 * Parses `"host"`, `"host:port"` or `"[v6]:port"` (the forms `.pml.json` accepts).
 *
 * @example
 * ```ts
 * parseGrant("127.0.0.1:8080"); // { host: "127.0.0.1", port: 8080 }
 * ```
 */
export function parseGrant(text: string): NetGrant {
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?$/.exec(text.trim());
  if (!m) throw new PmlError("CONFIG_INVALID", `Cannot read the network grant "${text}"`);
  const port = m[2] === undefined ? undefined : Number(m[2]);
  return { host: normalHost(m[1]), ...(port === undefined ? {} : { port }) };
}

/** Lower case, without IPv6 brackets or a trailing dot: how grants and requests are compared. */
function normalHost(host: string): string {
  return host.replace(/^\[(.*)\]$/, "$1").replace(/\.$/, "").toLowerCase();
}

/** Whether `host:port` (as a client named it) is granted. */
export function isGranted(grants: readonly NetGrant[], host: string, port: number): boolean {
  const name = normalHost(host);
  return grants.some((g) => g.host === name && (g.port === undefined || g.port === port));
}

/**
 * A folder name for a proxy started later (a launch described as data before it runs): short,
 * since a unix socket's path is limited to 107 bytes.
 */
export function proxyDir(): string {
  const tmp = Deno.env.get("TMPDIR") || "/tmp";
  return `${tmp}/pml-net-${crypto.randomUUID().slice(0, 13)}`;
}

/** A destination refused or unreachable, for the proxy's log line. */
export interface ProxyEvent {
  readonly host: string;
  readonly port: number;
  readonly allowed: boolean;
  readonly via: "http" | "socks5";
}

const MAX_HEAD = 64 * 1024;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A host-side proxy for one sandbox: its two sockets live in a private folder. */
export class NetProxy {
  /** The folder holding `http.sock` and `socks.sock` (bound into the sandbox). */
  readonly dir: string;
  /** Its loopback TCP ports (HTTP, SOCKS5) when it listens on them (`tcp`). */
  readonly ports?: readonly [number, number];
  readonly #grants: readonly NetGrant[];
  readonly #listeners: Deno.Listener[] = [];
  readonly #conns = new Set<Deno.Conn>();
  readonly #onEvent?: (event: ProxyEvent) => void;
  #closed = false;

  /**
   * Starts listening at once (synchronously): a sandbox can be spawned right after. `dir` (from
   * {@link proxyDir}, chosen before) must not exist yet; a fresh temporary folder by default.
   */
  constructor(
    grants: readonly string[],
    opts: {
      dir?: string;
      onEvent?: (event: ProxyEvent) => void;
      /**
       * Also listen on loopback TCP (ephemeral ports, written to `ports` in the folder as
       * `HTTP SOCKS`): the Landlock and Seatbelt walls have no network namespace to bridge into,
       * and let the sandbox connect to these two ports only.
       */
      tcp?: boolean;
    } = {},
  ) {
    this.#grants = grants.map(parseGrant);
    this.#onEvent = opts.onEvent;
    // Only the sandbox (and `pml`) need the sockets: no one else on the machine. A folder that
    // already exists is refused (someone else's, prepared to catch the connections).
    if (opts.dir) Deno.mkdirSync(opts.dir, { mode: 0o700 });
    this.dir = opts.dir ?? Deno.makeTempDirSync({ prefix: "pml-net-" });
    Deno.chmodSync(this.dir, 0o700);
    const http = Deno.listen({ transport: "unix", path: `${this.dir}/http.sock` });
    const socks = Deno.listen({ transport: "unix", path: `${this.dir}/socks.sock` });
    this.#listeners.push(http, socks);
    void this.#accept(http, (conn) => this.#http(conn));
    void this.#accept(socks, (conn) => this.#socks(conn));
    if (opts.tcp) {
      const tcpHttp = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      const tcpSocks = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      this.#listeners.push(tcpHttp, tcpSocks);
      void this.#accept(tcpHttp, (conn) => this.#http(conn));
      void this.#accept(tcpSocks, (conn) => this.#socks(conn));
      this.ports = [tcpHttp.addr.port, tcpSocks.addr.port];
      Deno.writeTextFileSync(`${this.dir}/ports`, `${this.ports[0]} ${this.ports[1]}\n`);
    }
  }

  /** Stops listening, cuts every connection, removes the folder. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const l of this.#listeners) {
      try {
        l.close();
      } catch { /* already closed */ }
    }
    for (const c of this.#conns) closeQuietly(c);
    try {
      Deno.removeSync(this.dir, { recursive: true });
    } catch { /* already gone */ }
  }

  async #accept(listener: Deno.Listener, serve: (conn: Deno.Conn) => Promise<void>) {
    try {
      for await (const conn of listener) {
        this.#conns.add(conn);
        serve(conn).catch(() => {}).finally(() => {
          this.#conns.delete(conn);
          closeQuietly(conn);
        });
      }
    } catch { /* listener closed */ }
  }

  /** Opens `host:port` for a client when granted; reports the attempt either way. */
  async #open(host: string, port: number, via: ProxyEvent["via"]): Promise<Deno.Conn | string> {
    const allowed = port > 0 && port < 65536 && isGranted(this.#grants, host, port);
    this.#onEvent?.({ host, port, allowed, via });
    if (!allowed) return `network access to ${host}:${port} is not granted`;
    try {
      const conn = await Deno.connect({ hostname: normalHost(host), port });
      this.#conns.add(conn);
      return conn;
    } catch (err) {
      return `cannot reach ${host}:${port}: ${(err as Error).message}`;
    }
  }

  async #http(client: Deno.Conn): Promise<void> {
    const got = await readHead(client);
    if (!got) return;
    const { head, rest } = got;
    const [requestLine, ...headers] = head.split("\r\n");
    const [method, target, version] = requestLine.split(" ");
    let host: string, port: number, forward: Uint8Array | undefined;
    if (method === "CONNECT") {
      const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(target ?? "");
      if (!m) return void await reply(client, 400, "CONNECT needs host:port");
      host = m[1];
      port = Number(m[2]);
    } else {
      let url: URL;
      try {
        url = new URL(target ?? "");
      } catch {
        return void await reply(client, 400, "a proxy request needs an absolute URL");
      }
      if (url.protocol !== "http:") return void await reply(client, 400, "only http:// here");
      host = url.hostname;
      port = Number(url.port || 80);
      // Origin-form to the server; the rest of the head and body pass unchanged. Later requests
      // on the same connection go to the same server, whatever they name.
      const kept = headers.filter((h) => !/^proxy-/i.test(h));
      forward = concat(
        encoder.encode([`${method} ${url.pathname}${url.search} ${version}`, ...kept, "", ""]
          .join("\r\n")),
        rest,
      );
    }
    const upstream = await this.#open(host, port, "http");
    if (typeof upstream === "string") return void await reply(client, 403, upstream);
    if (forward) await writeAll(upstream, forward);
    else {
      await writeAll(client, encoder.encode("HTTP/1.1 200 Connection established\r\n\r\n"));
      if (rest.length) await writeAll(upstream, rest);
    }
    await pipeBoth(client, upstream);
  }

  async #socks(client: Deno.Conn): Promise<void> {
    const r = new Reader(client);
    const [ver, nMethods] = await r.take(2);
    if (ver !== 5) return;
    const methods = await r.take(nMethods);
    if (!methods.includes(0)) return void await writeAll(client, new Uint8Array([5, 0xff]));
    await writeAll(client, new Uint8Array([5, 0]));
    const [, cmd, , atyp] = await r.take(4);
    let host: string;
    if (atyp === 1) host = [...await r.take(4)].join(".");
    else if (atyp === 3) host = decoder.decode(await r.take((await r.take(1))[0]));
    else if (atyp === 4) {
      const b = await r.take(16);
      host = Array.from({ length: 8 }, (_, i) => ((b[2 * i] << 8) | b[2 * i + 1]).toString(16))
        .join(":");
    } else return;
    const [hi, lo] = await r.take(2);
    const port = (hi << 8) | lo;
    // 7: command not supported (BIND, UDP ASSOCIATE); 2: not allowed by the ruleset.
    const fail = (code: number) =>
      writeAll(client, new Uint8Array([5, code, 0, 1, 0, 0, 0, 0, 0, 0]));
    if (cmd !== 1) return void await fail(7);
    const upstream = await this.#open(host, port, "socks5");
    if (typeof upstream === "string") {
      return void await fail(upstream.startsWith("network") ? 2 : 5);
    }
    await writeAll(client, new Uint8Array([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]));
    const extra = r.leftover();
    if (extra.length) await writeAll(upstream, extra);
    await pipeBoth(client, upstream);
  }
}

/** Reads an HTTP head (up to the blank line); `rest` is what came after it. */
async function readHead(conn: Deno.Conn): Promise<{ head: string; rest: Uint8Array } | null> {
  let buf = new Uint8Array(0);
  const chunk = new Uint8Array(16 * 1024);
  while (buf.length < MAX_HEAD) {
    const n = await conn.read(chunk);
    if (n === null) return null;
    buf = concat(buf, chunk.subarray(0, n));
    const end = indexOfBlankLine(buf);
    if (end >= 0) {
      return { head: decoder.decode(buf.subarray(0, end)), rest: buf.slice(end + 4) };
    }
  }
  return null;
}

function indexOfBlankLine(buf: Uint8Array): number {
  for (let i = 0; i + 3 < buf.length; i++) {
    if (buf[i] === 13 && buf[i + 1] === 10 && buf[i + 2] === 13 && buf[i + 3] === 10) return i;
  }
  return -1;
}

function reply(conn: Deno.Conn, status: number, why: string): Promise<void> {
  const body = `pml: ${why}\n`;
  const text = status === 403 ? "Forbidden" : "Bad Request";
  return writeAll(
    conn,
    encoder.encode(
      `HTTP/1.1 ${status} ${text}\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    ),
  ).catch(() => {});
}

/** Exact reads from a connection (SOCKS5 framing). */
class Reader {
  #buf: Uint8Array<ArrayBuffer> = new Uint8Array(0);
  constructor(readonly conn: Deno.Conn) {}
  async take(n: number): Promise<Uint8Array> {
    const chunk = new Uint8Array(4096);
    while (this.#buf.length < n) {
      const got = await this.conn.read(chunk);
      if (got === null) throw new Error("closed");
      this.#buf = concat(this.#buf, chunk.subarray(0, got));
    }
    const out = this.#buf.slice(0, n);
    this.#buf = this.#buf.slice(n);
    return out;
  }
  leftover(): Uint8Array {
    return this.#buf;
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let at = 0; at < bytes.length;) at += await conn.write(bytes.subarray(at));
}

/** Copies both ways until either side ends, then closes both. */
async function pipeBoth(a: Deno.Conn, b: Deno.Conn): Promise<void> {
  const copy = async (from: Deno.Conn, to: Deno.Conn) => {
    try {
      await from.readable.pipeTo(to.writable, { preventClose: false });
    } catch { /* the other side went away */ }
  };
  await Promise.race([copy(a, b), copy(b, a)]);
  closeQuietly(a);
  closeQuietly(b);
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* already closed */ }
}
