/**
 * In-memory cache of served registry entries, keyed by 4-part name, so `GET /mcp/{fqdn}` costs
 * no database round trip when hot.
 *
 * Consistency: a write through this server instance (publish) clears the cache at once. Writes by
 * other processes (another instance sharing PostgreSQL, `pml-server registry sync`) are noticed
 * through the store's registry version counter, read at most once per `ttlMs` (default 1 s):
 * a stale answer lives at most `ttlMs` plus one version query.
 *
 * An outage of the store ({@link StoreUnavailableError}) does not stop what the cache holds: an
 * entry served before the outage is served on (it may be the previous version of an entry another
 * instance changed meanwhile), and while the store is down the version is checked again in the
 * background rather than ahead of each answer. An entry the cache does not hold is the store's
 * error (`503 store_unavailable`).
 *
 * @module
 */
import type { EntryType, RegistryEntry, Routing, Store } from "../store/store.ts";
import { StoreUnavailableError } from "../store/unavailable.ts";
import { fqdnWithHash } from "./fqdn.ts";

/** An entry prepared for serving: bytes and headers computed once. */
export interface ServedEntry {
  readonly name: string;
  /** Current 5-part FQDN. */
  readonly fqdn: string;
  /** First 4 hex characters of the SHA-256 of `body`. */
  readonly shortHash: string;
  readonly type: EntryType;
  readonly routing: Routing;
  /** `"<full sha256 hex>"`, quoted as an HTTP entity tag. */
  readonly etag: string;
  readonly body: Uint8Array;
  /** Headers of a 200 (and, without `content-type`, of a 304). */
  readonly headers: readonly [string, string][];
}

/** Options of {@link RegistryCache}. */
export interface RegistryCacheOptions {
  /** How long the cached version is trusted before asking the store again (ms, default 1000). */
  readonly ttlMs?: number;
  /** Most names kept (known and unknown); the oldest is dropped beyond it (default 10 000). */
  readonly maxEntries?: number;
  /** Clock in ms (tests pass a fake). */
  readonly now?: () => number;
}

/** See the module documentation. */
export class RegistryCache {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, ServedEntry | null>();
  #version: number | undefined;
  #checkedAt = Number.NEGATIVE_INFINITY;
  #checking: Promise<void> | undefined;
  #generation = 0;
  /** The last version check failed: the store is down. */
  #storeDown = false;

  constructor(store: Store, options: RegistryCacheOptions = {}) {
    this.#store = store;
    this.#ttlMs = options.ttlMs ?? 1000;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** The served form of the entry `name`, or `null` when the registry has none. */
  async lookup(name: string): Promise<ServedEntry | null> {
    if (this.#now() - this.#checkedAt >= this.#ttlMs) {
      const checked = this.#checkVersion();
      if (this.#storeDown) checked.catch(() => {}); // in the background: serve what is held
      else await checked;
    }
    const hit = this.#entries.get(name);
    if (hit !== undefined) return hit;
    const generation = this.#generation;
    const entry = await this.#store.getEntry(name);
    const served = entry ? prepare(entry) : null;
    if (generation === this.#generation) this.#remember(name, served);
    return served;
  }

  /** Forgets everything (after a write by this instance). */
  invalidate(): void {
    this.#entries.clear();
    this.#generation += 1;
    this.#checkedAt = Number.NEGATIVE_INFINITY;
  }

  #checkVersion(): Promise<void> {
    this.#checking ??= (async () => {
      try {
        const version = await this.#store.registryVersion();
        if (version !== this.#version) {
          this.#entries.clear();
          this.#generation += 1;
          this.#version = version;
        }
        this.#checkedAt = this.#now();
        this.#storeDown = false;
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) throw error;
        this.#storeDown = true;
      } finally {
        this.#checking = undefined;
      }
    })();
    return this.#checking;
  }

  #remember(name: string, served: ServedEntry | null): void {
    if (this.#entries.size >= this.#maxEntries) {
      this.#entries.delete(this.#entries.keys().next().value!);
    }
    this.#entries.set(name, served);
  }
}

const CONTENT_TYPES: Record<EntryType, string> = {
  deno: "application/typescript",
  stdio: "application/json",
  http: "application/json",
};

/** Computes the served form (FQDN, ETag, headers) of a stored entry. */
export function prepare(entry: RegistryEntry): ServedEntry {
  const etag = `"${entry.hash}"`;
  return {
    name: entry.name,
    fqdn: fqdnWithHash(entry.name, entry.hash),
    shortHash: entry.hash.slice(0, 4),
    type: entry.type,
    routing: entry.routing,
    etag,
    body: entry.body,
    headers: [
      ["content-type", CONTENT_TYPES[entry.type]],
      ["etag", etag],
      ["cache-control", "public, max-age=3600"],
      ["x-pml-type", entry.type],
      ["x-pml-routing", entry.routing],
    ],
  };
}
