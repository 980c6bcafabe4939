/**
 * `RecentKeys`: the API key lookup of the app, which remembers each key's record as the store last
 * gave it, to answer for a short while when the store cannot ({@link StoreUnavailableError}).
 *
 * While the store answers, every request is checked against it (a revocation applies at once, on
 * every instance). During an outage, a key the store answered for within the last `graceMs`
 * (default 60 s) is taken as it was then, revoked keys included; any other key is the store's
 * error (`503 store_unavailable`). So agents that were calling keep calling the tools that need no
 * database, and a key revoked less than `graceMs` before an outage is refused only once the
 * database is back. At most `maxKeys` (default 1,000) are remembered, the least recently checked
 * dropped first; only SHA-256 hashes are keys of the map.
 *
 * @module
 */
import type { ApiKeyRecord, Store } from "../store/store.ts";
import { StoreUnavailableError } from "../store/unavailable.ts";

/** What authentication needs of a store. */
export type KeyLookup = Pick<Store, "findApiKeyByHash">;

/** Options of {@link RecentKeys}. */
export interface RecentKeysOptions {
  /** How old a remembered answer may be to stand in during an outage (ms, default 60 000). */
  readonly graceMs?: number;
  /** Most keys remembered (default 1000). */
  readonly maxKeys?: number;
  readonly now?: () => number;
}

/** See the module documentation. */
export class RecentKeys implements KeyLookup {
  readonly #store: KeyLookup;
  readonly #graceMs: number;
  readonly #maxKeys: number;
  readonly #now: () => number;
  readonly #seen = new Map<string, { record: ApiKeyRecord; at: number }>();

  constructor(store: KeyLookup, options: RecentKeysOptions = {}) {
    this.#store = store;
    this.#graceMs = options.graceMs ?? 60_000;
    this.#maxKeys = options.maxKeys ?? 1000;
    this.#now = options.now ?? Date.now;
  }

  /** Keys remembered now. */
  get size(): number {
    return this.#seen.size;
  }

  async findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    try {
      const record = await this.#store.findApiKeyByHash(keyHash);
      this.#seen.delete(keyHash);
      if (record) {
        if (this.#seen.size >= this.#maxKeys) this.#seen.delete(this.#seen.keys().next().value!);
        this.#seen.set(keyHash, { record, at: this.#now() });
      }
      return record;
    } catch (error) {
      const seen = this.#seen.get(keyHash);
      if (
        error instanceof StoreUnavailableError && seen && this.#now() - seen.at <= this.#graceMs
      ) {
        return seen.record;
      }
      throw error;
    }
  }
}
