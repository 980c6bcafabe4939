/**
 * The registry cache across instances: two apps on one database (SQLite file; PostgreSQL when
 * PML_TEST_DATABASE_URL is set). A publish through A is visible through A at once and through B
 * once B's version check is due (fake clock, no sleeping).
 */
import assert from "node:assert/strict";
import postgres from "postgres";
import { join } from "node:path";
import { createApp } from "../src/app.ts";
import { createApiKey } from "../src/auth/keys.ts";
import { loadRoutingTable } from "../src/registry/routing_table.ts";
import { PostgresStore } from "../src/store/postgres_store.ts";
import { SqliteStore } from "../src/store/sqlite_store.ts";
import type { Store } from "../src/store/store.ts";
import { capabilityCode, FIXTURE_REGISTRY } from "./helpers.ts";

const url = Deno.env.get("PML_TEST_DATABASE_URL");

async function crossInstance(open: () => Promise<Store>) {
  const routing = await loadRoutingTable(join(FIXTURE_REGISTRY, "routing.json"));
  const [storeA, storeB] = [await open(), await open()];
  let clock = 0;
  const now = () => clock;
  const a = createApp({ store: storeA, routing, now, cacheTtlMs: 1000 });
  const b = createApp({ store: storeB, routing, now, cacheTtlMs: 1000 });
  const { key } = await createApiKey(storeA);
  const publish = (code: string) =>
    a(
      new Request("http://a/mcp", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ org: "o", project: "p", namespace: "n", action: "run", code }),
      }),
    ).then((r) => r.json());
  const current = async (app: typeof a) => {
    const response = await app(new Request("http://x/mcp/o.p.n.run"));
    await response.body?.cancel();
    return response.headers.get("location");
  };
  try {
    assert.equal(await current(b), null); // B caches "not found"
    const v1 = (await publish(capabilityCode("run", "return 1;"))).fqdn;
    assert.equal(await current(a), `/mcp/${v1}`);
    assert.equal(await current(b), null); // still within B's TTL: stale by design
    clock += 1000;
    assert.equal(await current(b), `/mcp/${v1}`);
    const v2 = (await publish(capabilityCode("run", "return 2;"))).fqdn;
    assert.equal(await current(a), `/mcp/${v2}`);
    clock += 1000;
    assert.equal(await current(b), `/mcp/${v2}`);
    const old = await b(new Request(`http://x/mcp/${v1}`));
    assert.equal((await old.json()).currentFqdn, v2);
  } finally {
    await storeA.close();
    await storeB.close();
  }
}

Deno.test("SqliteStore: two instances on one file see a publish within the cache TTL", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pml-cache-" });
  try {
    await crossInstance(async () => {
      const store = new SqliteStore(join(dir, "pml.db"));
      await store.migrate();
      return store;
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "PostgresStore: two instances on one database see a publish within the cache TTL",
  ignore: !url,
  async fn() {
    const schema = `pml_cache_${crypto.randomUUID().replaceAll("-", "")}`;
    const admin = postgres(url!, { max: 1, onnotice: () => {} });
    await admin.unsafe(`CREATE SCHEMA ${schema}`);
    try {
      await crossInstance(async () => {
        const store = new PostgresStore(url!, { schema, max: 2 });
        await store.migrate();
        return store;
      });
    } finally {
      await admin.unsafe(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    }
  },
});
