import { join } from "node:path";
import { writeFileAtomic } from "../config/write_json.ts";
import {
  createRoutingResolver,
  EMBEDDED_ROUTING,
  type Routing,
  type RoutingResolver,
  type RoutingTable,
} from "./routing.ts";

/** The routing cache file in `~/.pml` (shared by projects, one entry per cloud). */
export const ROUTING_CACHE_FILE = "routing.json";

/** What `~/.pml/routing.json` holds: the last table a cloud served, with its ETag. */
interface RoutingCache {
  readonly cloudUrl: string;
  readonly etag?: string;
  readonly table: RoutingTable;
  readonly fetchedAt: string;
}

/** Dependencies of {@link SyncedRouting}; `fetch` and the clock are injectable. */
export interface SyncedRoutingDeps {
  readonly cloudUrl: string;
  readonly pmlHome: string;
  /** Sync only happens in cloud mode (an API key is set). */
  readonly cloudMode: boolean;
  readonly fetch?: typeof fetch;
  /** Bound on one sync request (default 10 s). */
  readonly timeoutMs?: number;
  /** Aborts a running sync (on shutdown). */
  readonly signal?: AbortSignal;
}

/** True when `value` has the `{version, client[], server[], default}` shape of DESIGN §6. */
export function isRoutingTable(value: unknown): value is RoutingTable {
  const t = value as Partial<RoutingTable> | null;
  const strings = (a: unknown) => Array.isArray(a) && a.every((s) => typeof s === "string");
  return !!t && typeof t === "object" && typeof t.version === "number" && strings(t.client) &&
    strings(t.server) && (t.default === "client" || t.default === "server");
}

/**
 * Applies a table from the cloud on top of the embedded one. The namespaces the package itself
 * knows as `client` stay `client` whatever the cloud says (local execution never goes to the server,
 * DESIGN §11.1), and unknown tools keep routing to `client`.
 */
export function mergeRoutingTable(remote: RoutingTable): RoutingTable {
  const pinned = new Set(EMBEDDED_ROUTING.client);
  return Object.freeze({
    version: remote.version,
    client: [...new Set([...EMBEDDED_ROUTING.client, ...remote.client])],
    server: remote.server.filter((ns) => !pinned.has(ns)),
    default: "client" as const,
  });
}

/**
 * The routing resolver of a running package: starts from the cached table of this cloud (or the
 * embedded copy) and, in cloud mode, refreshes it from `GET {cloudUrl}/api/routing` with
 * `If-None-Match` in the background. Start-up never waits for the network.
 *
 * @example
 * ```ts
 * const routing = new SyncedRouting({ cloudUrl, pmlHome, cloudMode: true });
 * routing.sync(); // background; routing.routeOf() works right away
 * ```
 */
export class SyncedRouting implements RoutingResolver {
  readonly #deps: SyncedRoutingDeps;
  #resolver: RoutingResolver;
  #etag?: string;
  #pending?: Promise<void>;

  constructor(deps: SyncedRoutingDeps) {
    this.#deps = deps;
    const cached = this.#readCache();
    this.#resolver = createRoutingResolver(cached ? mergeRoutingTable(cached.table) : undefined);
    this.#etag = cached?.etag;
  }

  get table(): RoutingTable {
    return this.#resolver.table;
  }

  /** The in-flight sync, if one is running (callers may wait on it, bounded). */
  get pending(): Promise<void> | undefined {
    return this.#pending;
  }

  routeOf(toolId: string): Routing {
    return this.#resolver.routeOf(toolId);
  }

  resolveRouting(toolsUsed: readonly string[]): Routing {
    return this.#resolver.resolveRouting(toolsUsed);
  }

  get #cachePath(): string {
    return join(this.#deps.pmlHome, ROUTING_CACHE_FILE);
  }

  #readCache(): RoutingCache | undefined {
    try {
      const cache = JSON.parse(Deno.readTextFileSync(this.#cachePath)) as RoutingCache;
      return cache?.cloudUrl === this.#deps.cloudUrl && isRoutingTable(cache.table)
        ? cache
        : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Refreshes the table from the cloud (no-op outside cloud mode). Never throws: when the cloud
   * is unreachable or answers garbage, the current table stays.
   */
  sync(): Promise<void> {
    if (!this.#deps.cloudMode) return Promise.resolve();
    this.#pending ??= this.#sync().finally(() => (this.#pending = undefined));
    return this.#pending;
  }

  async #sync(): Promise<void> {
    const fetchFn = this.#deps.fetch ?? fetch;
    const headers: Record<string, string> = { accept: "application/json" };
    if (this.#etag) headers["if-none-match"] = this.#etag;
    try {
      const res = await fetchFn(`${this.#deps.cloudUrl}/api/routing`, {
        headers,
        signal: AbortSignal.any([
          AbortSignal.timeout(this.#deps.timeoutMs ?? 10_000),
          ...(this.#deps.signal ? [this.#deps.signal] : []),
        ]),
      });
      if (res.status === 304 || !res.ok) {
        await res.body?.cancel();
        return;
      }
      const table: unknown = await res.json();
      if (!isRoutingTable(table)) return;
      const etag = res.headers.get("etag") ?? undefined;
      this.#resolver = createRoutingResolver(mergeRoutingTable(table));
      this.#etag = etag;
      const cache: RoutingCache = {
        cloudUrl: this.#deps.cloudUrl,
        etag,
        table,
        fetchedAt: new Date().toISOString(),
      };
      await writeFileAtomic(this.#cachePath, JSON.stringify(cache, null, 2) + "\n");
    } catch {
      // Offline or slow cloud: keep the table we have (cached or embedded).
    }
  }
}
