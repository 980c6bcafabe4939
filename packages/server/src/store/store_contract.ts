/**
 * The contract every {@link Store} implementation passes. `tests/store_test.ts` runs it against
 * `SqliteStore` and `PostgresStore`.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ApiKeyRecord, RegistryEntry, Store } from "./store.ts";

/** A database the contract can open several handles on (several server instances). */
export interface StoreFixture {
  /** A new, migrated handle on the same database. */
  open(): Promise<Store>;
  /** Closes nothing opened by `open` (the test does); removes the database. */
  cleanup(): Promise<void>;
}

/** Registers the contract tests for one implementation. */
export function defineStoreContract(
  name: string,
  fixture: () => Promise<StoreFixture>,
  options: { ignore?: boolean } = {},
): void {
  const test = (title: string, body: (open: () => Promise<Store>) => Promise<void>) =>
    Deno.test({
      name: `${name} contract: ${title}`,
      ignore: options.ignore,
      sanitizeResources: false,
      sanitizeOps: false,
      async fn() {
        const db = await fixture();
        const opened: Store[] = [];
        try {
          await body(async () => {
            const store = await db.open();
            opened.push(store);
            return store;
          });
        } finally {
          for (const store of opened) await store.close();
          await db.cleanup();
        }
      },
    });

  test("migrations are idempotent and safe to run concurrently", async (open) => {
    const [a, b] = await Promise.all([open(), open()]);
    await Promise.all([a.migrate(), b.migrate(), a.migrate()]);
    assert.deepEqual(await a.registryVersion(), 0);
    assert.deepEqual((await a.listEntries({ offset: 0, limit: 10 })).total, 0);
  });

  test("stores and returns the exact bytes and fields of an entry", async (open) => {
    const store = await open();
    const body = new Uint8Array([0, 255, 10, 0xc3, 0x28, 42]);
    const written = entry("acme.proj.data.load", { body, publishedBy: "key_1" });
    assert(await store.putEntry(written));
    const read = await store.getEntry("acme.proj.data.load");
    assert.deepEqual(read?.body, body);
    assert.deepEqual({ ...read, body: null }, { ...written, body: null });
    assert.deepEqual(await store.getEntry("acme.proj.data.missing"), undefined);
  });

  test("an identical put writes nothing; a changed put bumps the version", async (open) => {
    const store = await open();
    assert(await store.putEntry(entry("a.b.c.d")));
    const v1 = await store.registryVersion();
    assert.deepEqual(
      await store.putEntry(entry("a.b.c.d", { updatedAt: "2030-01-01T00:00:00Z" })),
      false,
    );
    assert.deepEqual(await store.registryVersion(), v1);
    assert(await store.putEntry(entry("a.b.c.d", { hash: "ff".repeat(32), tools: ["c:other"] })));
    assert(await store.registryVersion() > v1);
    assert.deepEqual((await store.getEntry("a.b.c.d"))?.hash, "ff".repeat(32));
    assert.deepEqual((await store.listEntries({ tool: "c:d", offset: 0, limit: 10 })).total, 0);
    assert.deepEqual((await store.listEntries({ tool: "c:other", offset: 0, limit: 10 })).total, 1);
  });

  test("lists by type, tool and text, ordered by name, with total and window", async (open) => {
    const store = await open();
    await store.putEntry(entry("pml.std.filesystem.read_file", { description: "Read a FILE" }));
    await store.putEntry(entry("pml.std.filesystem.write_file", { description: "Write a file" }));
    await store.putEntry(entry("pml.mcp.memory.server", {
      type: "stdio",
      description: "Knowledge graph",
      tools: ["memory:create_entities", "memory:read_graph"],
    }));
    await store.putEntry(entry("acme.x.stats.mean_100%", { description: "100% mean" }));
    const all = await store.listEntries({ offset: 0, limit: 2 });
    assert.deepEqual(all.total, 4);
    assert.deepEqual(all.items.map((i) => i.name), [
      "acme.x.stats.mean_100%",
      "pml.mcp.memory.server",
    ]);
    const page2 = await store.listEntries({ offset: 2, limit: 2 });
    assert.deepEqual(page2.items.map((i) => i.name), [
      "pml.std.filesystem.read_file",
      "pml.std.filesystem.write_file",
    ]);
    assert.deepEqual((await store.listEntries({ offset: 10, limit: 2 })).items, []);
    const stdio = await store.listEntries({ type: "stdio", offset: 0, limit: 10 });
    assert.deepEqual(stdio.items.map((i) => [i.name, i.tools]), [[
      "pml.mcp.memory.server",
      ["memory:create_entities", "memory:read_graph"],
    ]]);
    const byTool = await store.listEntries({ tool: "memory:read_graph", offset: 0, limit: 10 });
    assert.deepEqual(byTool.items.map((i) => i.name), ["pml.mcp.memory.server"]);
    const text = await store.listEntries({ q: "file", offset: 0, limit: 10 });
    assert.deepEqual(text.total, 2);
    assert.deepEqual((await store.listEntries({ q: "GRAPH", offset: 0, limit: 10 })).total, 1);
    assert.deepEqual((await store.listEntries({ q: "create_ent", offset: 0, limit: 10 })).total, 1);
    // LIKE metacharacters are literal: "%" matches only the entry that contains "%".
    assert.deepEqual((await store.listEntries({ q: "%", offset: 0, limit: 10 })).total, 1);
    assert.deepEqual((await store.listEntries({ q: "d_file", offset: 0, limit: 10 })).total, 1);
    const none = await store.listEntries({ type: "http", q: "file", offset: 0, limit: 10 });
    assert.deepEqual(none, { items: [], total: 0 });
  });

  test("deletes entries and lists names by origin", async (open) => {
    const store = await open();
    await store.putEntry(entry("pml.std.a.x"));
    await store.putEntry(entry("pml.std.a.y"));
    await store.putEntry(entry("acme.p.n.a", { origin: "publish" }));
    assert.deepEqual(await store.listNames("seed"), ["pml.std.a.x", "pml.std.a.y"]);
    assert.deepEqual(await store.listNames("publish"), ["acme.p.n.a"]);
    const before = await store.registryVersion();
    assert.deepEqual(await store.deleteEntries(["pml.std.a.x", "pml.std.nope.z"]), 1);
    assert(await store.registryVersion() > before);
    assert.deepEqual(await store.getEntry("pml.std.a.x"), undefined);
    assert.deepEqual(await store.deleteEntries([]), 0);
  });

  test("keeps API keys by hash, lists and revokes them", async (open) => {
    const store = await open();
    const key: ApiKeyRecord = {
      id: "key_1",
      prefix: "pml_abcdefgh",
      keyHash: "aa".repeat(32),
      label: "ci",
      createdAt: "2026-01-01T00:00:00.000Z",
      revokedAt: null,
    };
    await store.createApiKey(key);
    await store.createApiKey({ ...key, id: "key_2", keyHash: "bb".repeat(32), label: null });
    await assert.rejects(() => store.createApiKey({ ...key, id: "key_3" }));
    assert.deepEqual(await store.findApiKeyByHash("aa".repeat(32)), key);
    assert.deepEqual(await store.findApiKeyByHash("cc".repeat(32)), undefined);
    assert.deepEqual((await store.listApiKeys()).map((k) => k.id), ["key_1", "key_2"]);
    assert(await store.revokeApiKey("key_1", "2026-02-01T00:00:00.000Z"));
    assert(await store.revokeApiKey("key_1", "2026-03-01T00:00:00.000Z"));
    assert.deepEqual(await store.revokeApiKey("key_404", "2026-03-01T00:00:00.000Z"), false);
    assert.deepEqual(
      (await store.findApiKeyByHash("aa".repeat(32)))?.revokedAt,
      "2026-02-01T00:00:00.000Z",
    );
  });

  test("two handles on one database see each other's writes", async (open) => {
    const a = await open();
    const b = await open();
    const before = await b.registryVersion();
    await a.putEntry(entry("shared.p.n.a"));
    assert.deepEqual((await b.getEntry("shared.p.n.a"))?.hash, entry("shared.p.n.a").hash);
    assert(await b.registryVersion() !== before);
    await Promise.all([
      a.putEntry(entry("race.p.n.a", { description: "from a" })),
      b.putEntry(entry("race.p.n.a", { description: "from b" })),
    ]);
    assert.deepEqual((await a.listEntries({ q: "race.p", offset: 0, limit: 10 })).total, 1);
    await b.ping();
  });
}

function entry(name: string, fields: Partial<RegistryEntry> = {}): RegistryEntry {
  const [, , namespace, action] = name.split(".");
  return {
    name,
    hash: "ab".repeat(32),
    type: "deno",
    routing: "client",
    origin: "seed",
    description: `Entry ${name}`,
    tools: [`${namespace}:${action}`],
    publishedBy: null,
    body: new TextEncoder().encode(`export const name = ${JSON.stringify(name)};\n`),
    updatedAt: "2026-01-01T00:00:00.000Z",
    ...fields,
  };
}
