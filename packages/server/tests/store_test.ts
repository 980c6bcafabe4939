/**
 * Runs the one store contract against SQLite (always) and PostgreSQL (when
 * `PML_TEST_DATABASE_URL` is set; with `CI=true` a missing URL is a failure, not a skip).
 */
import postgres from "postgres";
import { defineStoreContract } from "../src/store/store_contract.ts";
import { SqliteStore } from "../src/store/sqlite_store.ts";
import { PostgresStore } from "../src/store/postgres_store.ts";

defineStoreContract("SqliteStore", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pml-store-" });
  return {
    async open() {
      const store = new SqliteStore(`${dir}/pml.db`);
      await store.migrate();
      return store;
    },
    cleanup: () => Deno.remove(dir, { recursive: true }),
  };
});

const url = Deno.env.get("PML_TEST_DATABASE_URL");
if (!url && Deno.env.get("CI") === "true") {
  Deno.test("PostgresStore contract: PML_TEST_DATABASE_URL is set (required when CI=true)", () => {
    throw new Error(
      'PML_TEST_DATABASE_URL is not set but CI="true": run scripts/postgres.sh and export its URL',
    );
  });
}

defineStoreContract("PostgresStore", async () => {
  const schema = `pml_test_${crypto.randomUUID().replaceAll("-", "")}`;
  const admin = postgres(url!, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE SCHEMA ${schema}`);
  return {
    async open() {
      const store = new PostgresStore(url!, { schema, max: 4 });
      await store.migrate();
      return store;
    },
    async cleanup() {
      await admin.unsafe(`DROP SCHEMA ${schema} CASCADE`);
      await admin.end();
    },
  };
}, { ignore: !url });
