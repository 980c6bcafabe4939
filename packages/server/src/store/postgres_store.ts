/**
 * `Store` on PostgreSQL (the `postgres` client), for several stateless server instances that
 * share one database. Migrations take an advisory lock so instances can start together.
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
}

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
  readonly #sql: Sql;

  constructor(url: string, options: PostgresStoreOptions = {}) {
    this.#sql = postgres(url, {
      max: options.max ?? 10,
      onnotice: () => {},
      connection: options.schema ? { search_path: options.schema } : {},
    });
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
    const [row] = await this.#sql`SELECT * FROM registry_entries WHERE name = ${name}`;
    return row && { ...toSummary(row), body: new Uint8Array(row.body) };
  }

  async putEntry(entry: RegistryEntry): Promise<boolean> {
    for (let attempt = 1;; attempt++) {
      try {
        return await this.#put(entry);
      } catch (error) {
        // Two instances inserting the same new name: the loser retries and sees the winner's row.
        const uniqueViolation = (error as { code?: string }).code === "23505";
        if (!uniqueViolation || attempt >= 3) throw error;
      }
    }
  }

  async #put(entry: RegistryEntry): Promise<boolean> {
    return await this.#sql.begin(async (tx) => {
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
    return await this.#sql.begin(async (tx) => {
      const result = await tx`DELETE FROM registry_entries WHERE name IN ${tx(names as string[])}`;
      if (result.count > 0) await tx`UPDATE registry_state SET version = version + 1 WHERE id = 1`;
      return result.count;
    });
  }

  async listNames(origin: EntryOrigin): Promise<string[]> {
    const rows = await this.#sql`SELECT name FROM registry_entries WHERE origin = ${origin}
      ORDER BY name`;
    return rows.map((row) => String(row.name));
  }

  async listEntries(query: CatalogQuery): Promise<CatalogPage> {
    const sql = this.#sql;
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
    const [{ version }] = await this.#sql`SELECT version FROM registry_state WHERE id = 1`;
    return Number(version);
  }

  async createApiKey(record: ApiKeyRecord): Promise<void> {
    await this.#sql`INSERT INTO api_keys (id, prefix, key_hash, label, created_at, revoked_at)
      VALUES (${record.id}, ${record.prefix}, ${record.keyHash}, ${record.label},
        ${record.createdAt}, ${record.revokedAt})`;
  }

  async findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    const [row] = await this.#sql`SELECT * FROM api_keys WHERE key_hash = ${keyHash}`;
    return row && toKey(row);
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    const rows = await this.#sql`SELECT * FROM api_keys ORDER BY created_at, id COLLATE "C"`;
    return rows.map(toKey);
  }

  async revokeApiKey(id: string, at: string): Promise<boolean> {
    const result = await this.#sql`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ${at})
      WHERE id = ${id}`;
    return result.count > 0;
  }

  async ping(): Promise<void> {
    await this.#sql`SELECT 1`;
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
