import { assert, assertEquals, assertRejects } from "../testing/assert.ts";
import { createAuditLog } from "../audit/audit.ts";
import { isPmlError } from "../errors.ts";
import { Lockfile } from "./lockfile.ts";
import { RegistryMetadataSource } from "./metadata_source.ts";
import { ModuleCache } from "./module_cache.ts";
import { RegistryClient } from "./registry_client.ts";
import { type TestRegistry, testRegistry } from "./_testing.ts";
import { loadRoutingTable, seedRegistry } from "../../../server/mod.ts";
import { join } from "node:path";

Deno.test("RegistryMetadataSource: stdio metadata from the server, pinned, cached for offline use", async () => {
  const repoRegistry = join(import.meta.dirname!, "..", "..", "..", "..", "registry");
  await using reg = await testRegistry();
  const ws = await Deno.makeTempDir({ prefix: "pml-meta-" });
  try {
    // Seed the server from the repository's registry/ folder (std modules, MCP metadata).
    const seeded = await seedThrough(reg, repoRegistry);
    const lockfile = () => Lockfile.open(ws);
    const source = new RegistryMetadataSource({
      client: new RegistryClient({ registries: [reg.url], fetch: reg.fetch }),
      cache: new ModuleCache(join(ws, "home")),
      lockfile,
      audit: createAuditLog(ws),
      warn: () => {},
    });
    const servers = await source.list();
    assert(servers.includes(seeded), servers.join(","));
    const meta = await source.get(seeded);
    assertEquals(meta?.server, seeded);
    assert((await lockfile()).get(`pml.mcp.${seeded}.server`));
    reg.down = true;
    assertEquals((await source.get(seeded))?.server, seeded, "cached metadata offline");
    reg.down = false;
    assertEquals(await source.get("no-such-server"), undefined);
    // A changed lock entry is an INTEGRITY_CHANGED error until accepted.
    const lock = await lockfile();
    const entry = lock.get(`pml.mcp.${seeded}.server`)!;
    await lock.record(`pml.mcp.${seeded}.server`, {
      ...entry,
      integrity: "sha256-" + "B".repeat(43) + "=",
    });
    const err = await assertRejects(() => source.get(seeded));
    assert(isPmlError(err, "INTEGRITY_CHANGED"), err.message);
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});

async function seedThrough(reg: TestRegistry, dir: string): Promise<string> {
  const routing = await loadRoutingTable(join(dir, "routing.json"));
  await seedRegistry(reg.store, { registryDir: dir, routing });
  const res = await reg.fetch(`${reg.url}/mcp?type=stdio`);
  const items = (await res.json()).items as { fqdn: string }[];
  assert(items.length > 0, "the repository registry has stdio metadata");
  return items[0].fqdn.split(".")[2];
}
