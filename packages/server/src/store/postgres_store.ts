/**
 * `Store` on PostgreSQL (the `postgres` client), for several stateless server instances that
 * share one database. Migrations take an advisory lock so instances can start together.
 *
 * An outage of the database is a {@link StoreUnavailableError}, soon and once:
 * - every operation has a deadline (`timeoutMs`, default 3 s, connecting included): a database
 *   that accepts connections and never answers (paused, or cut off by the network) fails the
 *   operation at the deadline, and the connection pool is replaced (its connections may never
 *   answer again);
 * - a refused or broken connection, and PostgreSQL's own "shutting down" / "starting up" /
 *   "too many connections" errors, are the same condition;
 * - while the store is down, one operation at a time tries the database and the others wait for
 *   its outcome (at most the deadline) instead of each trying on its own; the first one that
 *   succeeds ends the outage for all, with no reconnection back-off (the client's default waits
 *   up to 20 s between attempts, so held calls answered long after the database was back);
 * - a connection found dead by an operation (the database restarted) is replaced and the
 *   operation tried once more, within the same deadline.
 *
 * @module
 */
import postgres from "postgres";
import { MIGRATIONS, MIGRATIONS_TABLE } from "./migrations.ts";
import {
  type ApiKeyRecord,
  type CatalogPage,
  type CatalogQuery,
  type EntryOrigin,
  type EntrySummary,
  likePattern,
  type RegistryEntry,
  sameEntry,
  type Store,
} from "./store.ts";
import { StoreUnavailableError } from "./unavailable.ts";

/** Arbitrary constant that names the migration lock (`pg_advisory_xact_lock`). */
const MIGRATION_LOCK = 7_252_001;

type Sql = postgres.Sql;
type Row = postgres.Row;

/** Options of {@link PostgresStore}. */
export interface PostgresStoreOptions {
  /** Connection pool size per instance (default 10). */
  readonly max?: number;
  /** Schema to use instead of the default search path (tests use one schema each). */
  readonly schema?: string;
  /** Deadline of one operation, connecting included (ms, default 3000). */
  readonly timeoutMs?: number;
}

/** Default deadline of one store operation (ms). */
export const DEFAULT_STORE_TIMEOUT_MS = 3000;

/**
 * PostgreSQL implementation of {@link Store}.
 *
 * @example
 * ```ts
 * const store = new PostgresStore("postgres://postgres@127.0.0.1:54329/pml_test");
 * await store.migrate();
 * ```
 */
export class PostgresStore implements Store {
  readonly kind = "postgres";
  readonly #open: () => Sql;
  readonly #timeoutMs: number;
  #sql: Sql;
  /** Why the store is down (the last failure), or `undefined` while it answers. */
  #down: Error | undefined;
  /** While down: the outcome of the operation trying the database (`true`: it answered). */
  #probe: Promise<boolean> | undefined;

  constructor(url: string, options: PostgresStoreOptions = {}) {
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_STORE_TIMEOUT_MS;
    this.#open = () =>
      postgres(url, {
        max: options.max ?? 10,
        onnotice: () => {},
        connection: options.schema ? { search_path: options.schema } : {},
        connect_timeout: this.#timeoutMs / 1000,
        backoff: () => 0,
      });
    this.#sql = this.#open();
  }

  /**
   * Runs `operation` on the pool within the deadline; a failure of the database (not of the
   * query) becomes a {@link StoreUnavailableError}. While the store is down, one operation tries
   * the database and the others wait for its outcome. See the module documentation.
   */
  async #run<T>(operation: (sql: Sql) => Promise<T>): Promise<T> {
    if (this.#down) {
      if (this.#probe) {
        if (!await this.#probe) throw this.#unavailable(this.#down);
      } else {
        const attempt = this.#attempt(operation);
        this.#probe = attempt.then(() => true, () => false)
          .finally(() => this.#probe = undefined);
        return await attempt;
      }
    }
    return await this.#attempt(operation);
  }

  async #attempt<T>(operation: (sql: Sql) => Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DeadlineError(this.#timeoutMs)), this.#timeoutMs);
    });
    const sql = this.#sql;
    try {
      for (let retried = false;; retried = true) {
        try {
          const result = await Promise.race([operation(this.#sql), deadline]);
          this.#down = undefined;
          return result;
        } catch (error) {
          // A connection that died while idle (the database restarted) fails its next query
          // before sending it: once more, on a new connection.
          if (!retried && isOutage(error)) continue;
          throw error;
        }
      }
    } catch (error) {
      if (error instanceof DeadlineError) {
        // Its connections may never answer again (a paused server, a cut network): a new pool.
        if (this.#sql === sql) {
          this.#sql = this.#open();
          sql.end({ timeout: 0 }).catch(() => {});
        }
      } else if (!isOutage(error)) {
        throw error;
      }
      this.#down = error as Error;
      throw this.#unavailable(error as Error);
    } finally {
      clearTimeout(timer);
    }
  }

  #unavailable(cause: Error): StoreUnavailableError {
    return new StoreUnavailableError(
      `The PostgreSQL store is unavailable: ${cause.message}`,
      { cause },
    );
  }

  async migrate(): Promise<void> {
    await this.#sql.begin(async (tx) => {
      await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
      await tx.unsafe(MIGRATIONS_TABLE);
      const [{ v }] = await tx`SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations`;
      for (const migration of MIGRATIONS.filter((m) => m.version > Number(v))) {
        await tx.unsafe(migration.postgres);
        await tx`INSERT INTO schema_migrations (version, name, applied_at)
          VALUES (${migration.version}, ${migration.name}, ${new Date().toISOString()})`;
      }
    });
  }

  async getEntry(name: string): Promise<RegistryEntry | undefined> {
    const [row] = await this.#run((sql) =>
      sql`SELECT * FROM registry_entries WHERE name = ${name}`
    );
    return row && { ...toSummary(row), body: new Uint8Array(row.body) };
  }

  async putEntry(entry: RegistryEntry): Promise<boolean> {
    for (let attempt = 1;; attempt++) {
      try {
        return await this.#run((sql) => this.#put(sql, entry));
      } catch (error) {
        // Two instances inserting the same new name: the loser retries and sees the winner's row.
        const uniqueViolation = (error as { code?: string }).code === "23505";
        if (!uniqueViolation || attempt >= 3) throw error;
      }
    }
  }

  async #put(sql: Sql, entry: RegistryEntry): Promise<boolean> {
    return await sql.begin(async (tx) => {
      // Row lock (or, for a new name, the primary key) serialises concurrent writers of one name.
      const [row] = await tx`SELECT * FROM registry_entries WHERE name = ${entry.name} FOR UPDATE`;
      if (row && sameEntry({ ...toSummary(row), body: new Uint8Array() }, entry)) return false;
      await tx`DELETE FROM registry_entries WHERE name = ${entry.name}`;
      await tx`INSERT INTO registry_entries (name, hash, type, routing, origin, description, tools,
          published_by, body, updated_at)
        VALUES (${entry.name}, ${entry.hash}, ${entry.type}, ${entry.routing}, ${entry.origin},
          ${entry.description}, ${JSON.stringify(entry.tools)}, ${entry.publishedBy},
          ${entry.body}, ${entry.updatedAt})`;
      const tools = [...new Set(entry.tools)];
      if (tools.length) {
        await tx`INSERT INTO registry_tools ${
          tx(tools.map((tool) => ({ name: entry.name, tool })))
        }`;
      }
      await tx`UPDATE registry_state SET version = version + 1 WHERE id = 1`;
      return true;
    });
  }

  async deleteEntries(names: readonly string[]): Promise<number> {
    if (names.length === 0) return 0;
    return await this.#run((sql) =>
      sql.begin(async (tx) => {
        const result = await tx`DELETE FROM registry_entries WHERE name IN ${
          tx(names as string[])
        }`;
        if (result.count > 0) {
          await tx`UPDATE registry_state SET version = version + 1 WHERE id = 1`;
        }
        return result.count;
      })
    );
  }

  async listNames(origin: EntryOrigin): Promise<string[]> {
    const rows = await this.#run((sql) =>
      sql`SELECT name FROM registry_entries WHERE origin = ${origin} ORDER BY name`
    );
    return rows.map((row) => String(row.name));
  }

  listEntries(query: CatalogQuery): Promise<CatalogPage> {
    return this.#run((sql) => this.#list(sql, query));
  }

  async #list(sql: Sql, query: CatalogQuery): Promise<CatalogPage> {
    const like = query.q ? likePattern(query.q) : "";
    const where = sql`WHERE TRUE
      ${query.type ? sql`AND e.type = ${query.type}` : sql``}
      ${
      query.tool
        ? sql`AND EXISTS (SELECT 1 FROM registry_tools t WHERE t.name = e.name AND t.tool = ${query.tool})`
        : sql``
    }
      ${
      query.q
        ? sql`AND (lower(e.name) LIKE ${like} ESCAPE '\\' OR lower(e.description) LIKE ${like} ESCAPE '\\'
          OR EXISTS (SELECT 1 FROM registry_tools t WHERE t.name = e.name
            AND lower(t.tool) LIKE ${like} ESCAPE '\\'))`
        : sql``
    }`;
    const [{ n }] = await sql`SELECT COUNT(*) AS n FROM registry_entries e ${where}`;
    const rows = await sql`SELECT name, hash, type, routing, origin, description, tools,
        published_by, updated_at
      FROM registry_entries e ${where} ORDER BY e.name COLLATE "C"
      LIMIT ${query.limit} OFFSET ${query.offset}`;
    return { items: rows.map(toSummary), total: Number(n) };
  }

  async registryVersion(): Promise<number> {
    const [{ version }] = await this.#run((sql) =>
      sql`SELECT version FROM registry_state WHERE id = 1`
    );
    return Number(version);
  }

  async createApiKey(record: ApiKeyRecord): Promise<void> {
    await this.#run((sql) =>
      sql`INSERT INTO api_keys (id, prefix, key_hash, label, created_at, revoked_at)
        VALUES (${record.id}, ${record.prefix}, ${record.keyHash}, ${record.label},
          ${record.createdAt}, ${record.revokedAt})`
    );
  }

  async findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const [row] = await this.#run((sql) => sql`SELECT * FROM api_keys WHERE key_hash = ${keyHash}`);
    return row && toKey(row);
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    const rows = await this.#run((sql) =>
      sql`SELECT * FROM api_keys ORDER BY created_at, id COLLATE "C"`
    );
    return rows.map(toKey);
  }

  async revokeApiKey(id: string, at: string): Promise<boolean> {
    const result = await this.#run((sql) =>
      sql`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ${at}) WHERE id = ${id}`
    );
    return result.count > 0;
  }

  async ping(): Promise<void> {
    await this.#run((sql) => sql`SELECT 1`);
  }

  async close(): Promise<void> {
    await this.#sql.end({ timeout: 5 });
  }
}

function toSummary(row: Row): EntrySummary {
  return {
    name: row.name,
    hash: row.hash,
    type: row.type,
    routing: row.routing,
    origin: row.origin,
    description: row.description,
    tools: JSON.parse(row.tools),
    publishedBy: row.published_by,
    updatedAt: row.updated_at,
  };
}

function toKey(row: Row): ApiKeyRecord {
  return {
    id: row.id,
    prefix: row.prefix,
    keyHash: row.key_hash,
    label: row.label,
    createdAt: row.created_at,
    revokedAt: row.revoked_at,
  };
}

/** A deadline of {@link PostgresStore} passed (`timeoutMs`). */
class DeadlineError extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/**
 * Errors that say the database cannot be reached or cannot serve now, rather than that the query
 * is wrong: the client's connection errors, the socket's, and SQLSTATE classes 08 (connection
 * exception), 57P0x (shutting down, starting up) and 53300 (too many connections).
 */
function isOutage(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  return OUTAGE_CODES.has(code) || code.startsWith("08") || code.startsWith("57P") ||
    code === "53300";
}

const OUTAGE_CODES = new Set([
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED",
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
]);
