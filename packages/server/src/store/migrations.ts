/**
 * Numbered schema migrations, applied in order by both stores and recorded in
 * `schema_migrations(version, name, applied_at)`. Never edit a released migration: add one.
 *
 * @module
 */

/** One schema step, written once per SQL dialect. */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sqlite: string;
  readonly postgres: string;
}

/** All migrations, ascending by version. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "registry entries and version counter",
    sqlite: `
      CREATE TABLE registry_entries (
        name TEXT PRIMARY KEY,
        hash TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('deno', 'stdio', 'http')),
        routing TEXT NOT NULL CHECK (routing IN ('client', 'server')),
        origin TEXT NOT NULL CHECK (origin IN ('seed', 'publish')),
        description TEXT NOT NULL,
        tools TEXT NOT NULL,
        published_by TEXT,
        body BLOB NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE registry_tools (
        name TEXT NOT NULL REFERENCES registry_entries(name) ON DELETE CASCADE,
        tool TEXT NOT NULL,
        PRIMARY KEY (name, tool)
      );
      CREATE INDEX registry_tools_by_tool ON registry_tools(tool);
      CREATE TABLE registry_state (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
      INSERT INTO registry_state (id, version) VALUES (1, 0);`,
    postgres: `
      CREATE TABLE registry_entries (
        name TEXT PRIMARY KEY,
        hash TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('deno', 'stdio', 'http')),
        routing TEXT NOT NULL CHECK (routing IN ('client', 'server')),
        origin TEXT NOT NULL CHECK (origin IN ('seed', 'publish')),
        description TEXT NOT NULL,
        tools TEXT NOT NULL,
        published_by TEXT,
        body BYTEA NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE registry_tools (
        name TEXT NOT NULL REFERENCES registry_entries(name) ON DELETE CASCADE,
        tool TEXT NOT NULL,
        PRIMARY KEY (name, tool)
      );
      CREATE INDEX registry_tools_by_tool ON registry_tools(tool);
      CREATE TABLE registry_state (id INTEGER PRIMARY KEY CHECK (id = 1), version BIGINT NOT NULL);
      INSERT INTO registry_state (id, version) VALUES (1, 0);`,
  },
  {
    version: 2,
    name: "api keys (hashed)",
    sqlite: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        prefix TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        label TEXT,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      );`,
    postgres: `
      CREATE TABLE api_keys (
        id TEXT PRIMARY KEY,
        prefix TEXT NOT NULL,
        key_hash TEXT NOT NULL UNIQUE,
        label TEXT,
        created_at TEXT NOT NULL,
        revoked_at TEXT
      );`,
  },
];

/** DDL of the bookkeeping table, identical in both dialects. */
export const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  applied_at TEXT NOT NULL
)`;
