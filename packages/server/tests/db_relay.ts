/**
 * A TCP relay on loopback between a store and its PostgreSQL, that a test cuts to make an outage
 * without touching the database (which other tests and people share):
 * - `refuse()`: live connections are broken and new ones closed at once (a stopped database);
 * - `blackhole()`: connections are accepted and nothing is carried either way (a paused
 *   database, or a network that drops packets): a client waits until its own deadline;
 * - `restore()`: connections held in the blackhole are closed (as TCP finally gives up on them)
 *   and new ones are carried again.
 */
type Mode = "open" | "refuse" | "blackhole";

/** See the module documentation. */
export class DbRelay {
  readonly #listener: Deno.TcpListener;
  readonly #target: { hostname: string; port: number };
  readonly #live = new Set<Deno.Conn>();
  #mode: Mode = "open";
  /** Connections accepted so far (a store that reconnects makes new ones). */
  accepted = 0;

  constructor(databaseUrl: string) {
    const url = new URL(databaseUrl);
    this.#target = { hostname: url.hostname, port: Number(url.port || 5432) };
    this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    this.#accept();
  }

  /** `databaseUrl` with its host and port replaced by the relay's. */
  url(databaseUrl: string): string {
    const url = new URL(databaseUrl);
    url.hostname = "127.0.0.1";
    url.port = String(this.#listener.addr.port);
    return url.href;
  }

  refuse(): void {
    this.#mode = "refuse";
    this.#dropAll();
  }

  blackhole(): void {
    this.#mode = "blackhole";
  }

  restore(): void {
    if (this.#mode === "blackhole") this.#dropAll();
    this.#mode = "open";
  }

  close(): void {
    this.#listener.close();
    this.#dropAll();
  }

  #dropAll(): void {
    for (const conn of this.#live) close(conn);
    this.#live.clear();
  }

  async #accept(): Promise<void> {
    for await (const client of this.#listener) {
      this.accepted++;
      if (this.#mode === "refuse") {
        close(client);
        continue;
      }
      this.#live.add(client);
      if (this.#mode === "blackhole") continue;
      Deno.connect(this.#target).then((server) => {
        this.#live.add(server);
        void this.#pump(client, server);
        void this.#pump(server, client);
      }, () => close(client));
    }
  }

  /** Carries bytes from `from` to `to` while the relay is open; a cut breaks both. */
  async #pump(from: Deno.Conn, to: Deno.Conn): Promise<void> {
    const buffer = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await from.read(buffer);
        if (n === null || this.#mode !== "open") break;
        let written = 0;
        while (written < n) written += await to.write(buffer.subarray(written, n));
      }
    } catch { /* the other side or a cut closed it */ }
    if (this.#mode === "blackhole") return; // held open, carrying nothing
    close(from);
    close(to);
    this.#live.delete(from);
    this.#live.delete(to);
  }
}

function close(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* already closed */ }
}
