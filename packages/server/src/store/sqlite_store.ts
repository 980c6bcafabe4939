/**
 * `Store` on an embedded SQLite file (`node:sqlite`), the default for a single server.
 *
 * @module
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";
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

type Row = Record<string, SQLInputValue>;

const SUMMARY_COLUMNS = "name, hash, type, routing, origin, description, tools, published_by, " +
  "updated_at";

/**
 * SQLite implementation of {@link Store}. Opens (or creates) the file at `path`; use
 * `":memory:"` for a private in-memory database.
 *
 * @example
 * ```ts
 * const store = new SqliteStore(":memory:");
 * await store.migrate();
 * ```
 */
export class SqliteStore implements Store {
  readonly kind = "sqlite";
  readonly #db: DatabaseSync;
  readonly #statements = new Map<string, StatementSync>();

  constructor(path: string) {
    this.#db = new DatabaseSync(path);
    this.#db.exec("PRAGMA journal_mode = WAL");
    this.#db.exec("PRAGMA busy_timeout = 5000");
    this.#db.exec("PRAGMA foreign_keys = ON");
  }

  migrate(): Promise<void> {
    return settle(() =>
      this.#transaction(() => {
        this.#db.exec(MIGRATIONS_TABLE);
        const row = this.#get("SELECT MAX(version) AS v FROM schema_migrations");
        const current = Number(row?.v ?? 0);
        for (const migration of MIGRATIONS.filter((m) => m.version > current)) {
          this.#db.exec(migration.sqlite);
          this.#run(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            migration.version,
            migration.name,
            new Date().toISOString(),
          );
        }
      })
    );
  }

  getEntry(name: string): Promise<RegistryEntry | undefined> {
    return settle(() => {
      const row = this.#get(
        `SELECT ${SUMMARY_COLUMNS}, body FROM registry_entries WHERE name = ?`,
        name,
      );
      return row && { ...toSummary(row), body: row.body as Uint8Array };
    });
  }

  putEntry(entry: RegistryEntry): Promise<boolean> {
    return settle(() =>
      this.#transaction(() => {
        const row = this.#get(
          `SELECT ${SUMMARY_COLUMNS}, body FROM registry_entries WHERE name = ?`,
          entry.name,
        );
        if (row && sameEntry({ ...toSummary(row), body: new Uint8Array() }, entry)) return false;
        this.#run("DELETE FROM registry_entries WHERE name = ?", entry.name);
        this.#run(
          "INSERT INTO registry_entries (name, hash, type, routing, origin, description, tools, " +
            "published_by, body, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
          entry.name,
          entry.hash,
          entry.type,
          entry.routing,
          entry.origin,
          entry.description,
          JSON.stringify(entry.tools),
          entry.publishedBy,
          entry.body,
          entry.updatedAt,
        );
        for (const tool of new Set(entry.tools)) {
          this.#run("INSERT INTO registry_tools (name, tool) VALUES (?, ?)", entry.name, tool);
        }
        this.#run("UPDATE registry_state SET version = version + 1 WHERE id = 1");
        return true;
      })
    );
  }

  deleteEntries(names: readonly string[]): Promise<number> {
    return settle(() =>
      this.#transaction(() => {
        let deleted = 0;
        for (const name of names) {
          deleted += Number(this.#run("DELETE FROM registry_entries WHERE name = ?", name).changes);
        }
        if (deleted > 0) this.#run("UPDATE registry_state SET version = version + 1 WHERE id = 1");
        return deleted;
      })
    );
  }

  listNames(origin: EntryOrigin): Promise<string[]> {
    return settle(() =>
      this.#all("SELECT name FROM registry_entries WHERE origin = ? ORDER BY name", origin)
        .map((row) => String(row.name))
    );
  }

  listEntries(query: CatalogQuery): Promise<CatalogPage> {
    return settle(() => this.#list(query));
  }

  #list(query: CatalogQuery): CatalogPage {
    const where: string[] = [];
    const params: SQLInputValue[] = [];
    if (query.type) {
      where.push("e.type = ?");
      params.push(query.type);
    }
    if (query.tool) {
      where.push("EXISTS (SELECT 1 FROM registry_tools t WHERE t.name = e.name AND t.tool = ?)");
      params.push(query.tool);
    }
    if (query.q) {
      const like = likePattern(query.q);
      where.push(
        "(lower(e.name) LIKE ? ESCAPE '\\' OR lower(e.description) LIKE ? ESCAPE '\\' OR EXISTS " +
          "(SELECT 1 FROM registry_tools t WHERE t.name = e.name AND lower(t.tool) LIKE ? ESCAPE '\\'))",
      );
      params.push(like, like, like);
    }
    const clause = where.length ? `WHERE ${where.join(" AND ")}` : "";
    const total = Number(
      this.#get(`SELECT COUNT(*) AS n FROM registry_entries e ${clause}`, ...params)?.n,
    );
    const rows = this.#all(
      `SELECT ${SUMMARY_COLUMNS} FROM registry_entries e ${clause} ORDER BY e.name LIMIT ? OFFSET ?`,
      ...params,
      query.limit,
      query.offset,
    );
    return { items: rows.map(toSummary), total };
  }

  registryVersion(): Promise<number> {
    return settle(() =>
      Number(this.#get("SELECT version FROM registry_state WHERE id = 1")?.version)
    );
  }

  createApiKey(record: ApiKeyRecord): Promise<void> {
    return settle(() => {
      this.#run(
        "INSERT INTO api_keys (id, prefix, key_hash, label, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?)",
        record.id,
        record.prefix,
        record.keyHash,
        record.label,
        record.createdAt,
        record.revokedAt,
      );
    });
  }

  findApiKeyByHash(keyHash: string): Promise<ApiKeyRecord | undefined> {
    return settle(() => {
      const row = this.#get("SELECT * FROM api_keys WHERE key_hash = ?", keyHash);
      return row && toKey(row);
    });
  }

  listApiKeys(): Promise<ApiKeyRecord[]> {
    return settle(() => this.#all("SELECT * FROM api_keys ORDER BY created_at, id").map(toKey));
  }

  revokeApiKey(id: string, at: string): Promise<boolean> {
    return settle(() =>
      this.#run("UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", at, id)
        .changes > 0
    );
  }

  ping(): Promise<void> {
    return settle(() => {
      this.#get("SELECT 1 AS one");
    });
  }

  close(): Promise<void> {
    return settle(() => {
      if (this.#db.isOpen) this.#db.close();
    });
  }

  #statement(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.#db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  #get(sql: string, ...params: SQLInputValue[]): Row | undefined {
    return this.#statement(sql).get(...params) as Row | undefined;
  }

  #all(sql: string, ...params: SQLInputValue[]): Row[] {
    return this.#statement(sql).all(...params) as Row[];
  }

  #run(sql: string, ...params: SQLInputValue[]) {
    return this.#statement(sql).run(...params);
  }

  #transaction<T>(work: () => T): T {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const result = work();
      this.#db.exec("COMMIT");
      return result;
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
  }
}

/** Runs synchronous SQLite work so that its exceptions become rejections, as the contract says. */
function settle<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work());
  } catch (error) {
    return Promise.reject(error);
  }
}

function toSummary(row: Row): EntrySummary {
  return {
    name: String(row.name),
    hash: String(row.hash),
    type: row.type as EntrySummary["type"],
    routing: row.routing as EntrySummary["routing"],
    origin: row.origin as EntrySummary["origin"],
    description: String(row.description),
    tools: JSON.parse(String(row.tools)),
    publishedBy: row.published_by === null ? null : String(row.published_by),
    updatedAt: String(row.updated_at),
  };
}

function toKey(row: Row): ApiKeyRecord {
  return {
    id: String(row.id),
    prefix: String(row.prefix),
    keyHash: String(row.key_hash),
    label: row.label === null ? null : String(row.label),
    createdAt: String(row.created_at),
    revokedAt: row.revoked_at === null ? null : String(row.revoked_at),
  };
}
