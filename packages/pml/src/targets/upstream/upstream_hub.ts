/**
 * Where the notifications of fronted servers go when no call of theirs is in flight (a list that
 * changed, a resource updated, a log line), and what every session answers the same way (the
 * workspace as `roots/list`). One per gateway: it fans a notification out to every connected
 * client (`pml stdio` has one, `pml serve` one per session), through a bound per server so that a
 * flood cannot stall a client (docs/surface.md "Notifications").
 *
 * @module
 */
import type { LoggingLevel, ServerNotification } from "../../sdk/types.ts";

/** What the hub needs of an open session: its log level set. */
export interface LevelSink {
  readonly logs: boolean;
  setLoggingLevel(level: LoggingLevel): Promise<void>;
}

/** A connected client, as the hub reaches it. */
export type ClientSink = (notification: ServerNotification) => Promise<void>;

/** The bound of one server's notifications: a bucket of `burst`, refilled by `perSecond`. */
export interface NotificationBound {
  readonly burst: number;
  readonly perSecond: number;
}

export const DEFAULT_NOTIFICATION_BOUND: NotificationBound = { burst: 100, perSecond: 50 };

/** See the module documentation. */
export class UpstreamHub {
  /** The workspace folder, the one root of every session. */
  readonly workspace: string;
  readonly #clients = new Set<ClientSink>();
  readonly #bound: NotificationBound;
  readonly #buckets = new Map<string, { tokens: number; at: number; dropped: number }>();
  readonly #now: () => number;
  readonly #warn: (line: string) => void;
  /** The sessions open now, and the level the client last set (given to each new one). */
  readonly #sessions = new Set<LevelSink>();
  #level?: LoggingLevel;

  constructor(
    opts: {
      workspace: string;
      bound?: NotificationBound;
      now?: () => number;
      warn?: (line: string) => void;
    },
  ) {
    this.workspace = opts.workspace;
    this.#bound = opts.bound ?? DEFAULT_NOTIFICATION_BOUND;
    this.#now = opts.now ?? (() => performance.now());
    this.#warn = opts.warn ?? ((line) => console.error(line));
  }

  /**
   * Adds an open session (it gets the client's log level, if one was set); the function returned
   * removes it.
   */
  open(session: LevelSink): () => void {
    this.#sessions.add(session);
    if (this.#level && session.logs) session.setLoggingLevel(this.#level).catch(() => {});
    return () => this.#sessions.delete(session);
  }

  /**
   * `logging/setLevel` of a client: passed on to every open session that logs, and to each one
   * opened later (a server is not started for it).
   */
  async setLoggingLevel(level: LoggingLevel): Promise<void> {
    this.#level = level;
    await Promise.allSettled(
      [...this.#sessions].filter((s) => s.logs).map((s) => s.setLoggingLevel(level)),
    );
  }

  /** Adds a client; the function returned removes it. */
  attach(sink: ClientSink): () => void {
    this.#clients.add(sink);
    return () => this.#clients.delete(sink);
  }

  /**
   * True when `server` may send one more notification now (its bucket has a token); a dropped one
   * is counted and said once on stderr when the server may send again.
   */
  admit(server: string): boolean {
    const now = this.#now();
    let b = this.#buckets.get(server);
    if (!b) this.#buckets.set(server, b = { tokens: this.#bound.burst, at: now, dropped: 0 });
    b.tokens = Math.min(
      this.#bound.burst,
      b.tokens + (now - b.at) / 1000 * this.#bound.perSecond,
    );
    b.at = now;
    if (b.tokens < 1) {
      b.dropped++;
      return false;
    }
    b.tokens--;
    if (b.dropped) {
      this.#warn(
        `pml: ${b.dropped} notifications of "${server}" dropped (more than PML passes on)`,
      );
      b.dropped = 0;
    }
    return true;
  }

  /** Sends `notification` of `server` to every client, when the server's bound admits it. */
  broadcast(server: string, notification: ServerNotification): void {
    if (!this.admit(server)) return;
    for (const sink of this.#clients) {
      // A client gone meanwhile: removed; the others still get it.
      sink(notification).catch(() => this.#clients.delete(sink));
    }
  }
}
