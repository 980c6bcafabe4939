/**
 * The storage seam of the server: one interface, implemented by `SqliteStore` (embedded,
 * default) and `PostgresStore` (shared by several server instances). Both pass the same
 * contract suite (`store_contract.ts`).
 *
 * @module
 */

/** How an entry is delivered: TypeScript module, stdio install metadata, HTTP proxy metadata. */
export type EntryType = "deno" | "stdio" | "http";
/** Where an entry runs (DESIGN §6). */
export type Routing = "client" | "server";
/** `seed`: from the repository's `registry/` folder; `publish`: a learned capability. */
export type EntryOrigin = "seed" | "publish";

/** All entry types, for validation. */
export const ENTRY_TYPES: readonly EntryType[] = ["deno", "stdio", "http"];

/** A registry entry without its served bytes (what the catalog lists). */
export interface EntrySummary {
  /** 4-part name `org.project.namespace.action`. */
  readonly name: string;
  /** Full SHA-256 hex digest of `body`; its first 4 characters are the FQDN hash. */
  readonly hash: string;
  readonly type: EntryType;
  readonly routing: Routing;
  readonly origin: EntryOrigin;
  readonly description: string;
  /** Tool ids (`namespace:action`) this entry provides. */
  readonly tools: readonly string[];
  /** Id of the API key that published it (learned capabilities only). */
  readonly publishedBy: string | null;
  /** ISO timestamp of the last change. */
  readonly updatedAt: string;
}

/** A registry entry with the exact bytes `GET /mcp/{fqdn}` serves. */
export interface RegistryEntry extends EntrySummary {
  readonly body: Uint8Array;
}

/** Filters and window of a catalog listing. */
export interface CatalogQuery {
  readonly type?: EntryType;
  /** Exact tool id the entry must provide. */
  readonly tool?: string;
  /** Case-insensitive substring of the name, description or a tool id. */
  readonly q?: string;
  readonly offset: number;
  readonly limit: number;
}

/** One page of the catalog, ordered by name, and the number of matching entries. */
export interface CatalogPage {
  readonly items: EntrySummary[];
  readonly total: number;
}

/** A stored API key: only the SHA-256 of the key is kept. */
export interface ApiKeyRecord {
  readonly id: string;
  /** First characters of the key, shown by `keys list` to recognise it. */
  readonly prefix: string;
  /** SHA-256 hex digest of the full key. */
  readonly keyHash: string;
  readonly label: string | null;
  readonly createdAt: string;
  readonly revokedAt: string | null;
}

/** Persistence used by the server. Methods reject on storage failures. */
export interface Store {
  /** `sqlite` or `postgres`, for `/health` and logs. */
  readonly kind: "sqlite" | "postgres";
  /** Creates or upgrades the schema (numbered migrations, safe to run concurrently). */
  migrate(): Promise<void>;
  /** The entry stored under the 4-part `name`. */
  getEntry(name: string): Promise<RegistryEntry | undefined>;
  /**
   * Inserts or replaces the entry named `entry.name`. Returns `false` (and writes nothing) when
   * the stored entry is already identical; otherwise bumps the registry version.
   */
  putEntry(entry: RegistryEntry): Promise<boolean>;
  /** Deletes the named entries; returns how many existed. Bumps the version if any. */
  deleteEntries(names: readonly string[]): Promise<number>;
  /** Names of all entries of one origin. */
  listNames(origin: EntryOrigin): Promise<string[]>;
  /** A page of entries matching `query`, ordered by name. */
  listEntries(query: CatalogQuery): Promise<CatalogPage>;
  /** A counter that changes whenever an entry is written or deleted (cache invalidation). */
  registryVersion(): Promise<number>;
  createApiKey(record: ApiKeyRecord): Promise<void>;
  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined>;
  listApiKeys(): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked at `at`; `false` when no key has this id. Revoking twice keeps the first date. */
  revokeApiKey(id: string, at: string): Promise<boolean>;
  /** Resolves when the storage answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Escapes `%`, `_` and `\` for a `LIKE … ESCAPE '\'` pattern. */
export function likePattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** True when the two entries would serve and list identically. */
export function sameEntry(a: RegistryEntry, b: RegistryEntry): boolean {
  return a.hash === b.hash && a.type === b.type && a.routing === b.routing &&
    a.origin === b.origin && a.description === b.description &&
    a.publishedBy === b.publishedBy && a.tools.join("\n") === b.tools.join("\n");
}
