/**
 * Chooses and opens the store: PostgreSQL when a database URL is configured, otherwise the
 * SQLite file `<dataDir>/pml-server.db`. The returned store is migrated.
 *
 * @module
 */
import { join } from "node:path";
import { PostgresStore } from "./postgres_store.ts";
import { SqliteStore } from "./sqlite_store.ts";
import type { Store } from "./store.ts";

/** Where the data lives. */
export interface StoreConfig {
  /** `postgres://…` (from `PML_DATABASE_URL`); wins over `dataDir`. */
  readonly databaseUrl?: string;
  /** Deadline of one PostgreSQL operation (ms, default 3000). */
  readonly databaseTimeoutMs?: number;
  /** Folder of the SQLite file, created if missing. */
  readonly dataDir: string;
}

/** Opens and migrates the configured store. */
export async function openStore(config: StoreConfig): Promise<Store> {
  let store: Store;
  if (config.databaseUrl) {
    store = new PostgresStore(config.databaseUrl, { timeoutMs: config.databaseTimeoutMs });
  } else {
    await Deno.mkdir(config.dataDir, { recursive: true, mode: 0o700 });
    store = new SqliteStore(join(config.dataDir, "pml-server.db"));
  }
  try {
    await store.migrate();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
