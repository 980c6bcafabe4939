/** `RecentKeys` stays bounded (counts) and stands in only during an outage, only within its grace. */
import assert from "node:assert/strict";
import { RecentKeys } from "../src/auth/recent_keys.ts";
import type { ApiKeyRecord } from "../src/store/store.ts";
import { StoreUnavailableError } from "../src/store/unavailable.ts";

const record = (id: string): ApiKeyRecord => ({
  id,
  prefix: "pml_x",
  keyHash: id,
  label: null,
  createdAt: "2026-01-01T00:00:00.000Z",
  revokedAt: null,
});

Deno.test("RecentKeys remembers at most maxKeys, and answers for them only while the store is down and within the grace", async () => {
  let down = false;
  let clock = 0;
  const store = {
    findApiKeyByHash: (hash: string) =>
      down
        ? Promise.reject(new StoreUnavailableError("down"))
        : Promise.resolve(hash.startsWith("k") ? record(hash) : undefined),
  };
  const keys = new RecentKeys(store, { maxKeys: 100, graceMs: 1000, now: () => clock });
  for (let i = 0; i < 1000; i++) await keys.findApiKeyByHash(`k${i}`);
  await keys.findApiKeyByHash("unknown");
  assert.equal(keys.size, 100);
  down = true;
  assert.equal((await keys.findApiKeyByHash("k999"))?.id, "k999");
  await assert.rejects(keys.findApiKeyByHash("k0"), StoreUnavailableError); // dropped
  clock = 1001;
  await assert.rejects(keys.findApiKeyByHash("k999"), StoreUnavailableError); // too old
});
