import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { createAuditLog } from "../audit/audit.ts";
import { metadataPin } from "../targets/stdio/stdio_target.ts";
import { McpPins } from "./mcp_pins.ts";
import { Lockfile } from "./lockfile.ts";
import { RegistryMetadataSource } from "./metadata_source.ts";
import { ModuleCache } from "./module_cache.ts";
import { RegistryClient } from "./registry_client.ts";
import { type TestRegistry, testRegistry } from "./_testing.ts";
import { loadRoutingTable, seedRegistry } from "../../../server/mod.ts";
import { join } from "node:path";

Deno.test("RegistryMetadataSource: stdio metadata from the server; offline, the version pinned in the lockfile", async () => {
  await using t = await seededRegistry();
  const { reg, ws, seeded } = t;
  const lock = await Lockfile.open(ws);
  const lockfile = () => Promise.resolve(lock);
  const cache = new ModuleCache(join(ws, "home"));
  const warnings: string[] = [];
  const source = new RegistryMetadataSource({
    client: new RegistryClient({ registries: [reg.url], fetch: reg.fetch }),
    cache,
    lockfile,
    warn: (l) => warnings.push(l),
    exclude: ["filesystem"],
  });
  const servers = await source.list();
  assert(servers.includes(seeded), servers.join(","));
  assert(!servers.includes("filesystem"), "std namespaces are never served from the registry");
  assertEquals(await source.get("filesystem"), undefined);
  const meta = await source.get(seeded);
  assertEquals(meta?.server, seeded);
  assertEquals(meta?.fqdn.split(".").length, 5, "the served 5-part FQDN");
  assertEquals(await source.get("no-such-server"), undefined);

  // Offline and never pinned: unknown here (the built-in catalogue may still know it).
  reg.down = true;
  const offline = new RegistryMetadataSource({
    client: new RegistryClient({ registries: [reg.url], fetch: reg.fetch }),
    cache,
    lockfile,
    warn: (l) => warnings.push(l),
  });
  assertEquals(await offline.get(seeded), undefined);
  // Pinned (as the stdio target pins it): read back from the cached pinned document.
  const pins = new McpPins({ lockfile, cache, audit: createAuditLog(ws) });
  await pins.checkMetadata(`pml.mcp.${seeded}.server`, metadataPin(meta!));
  const back = await offline.get(seeded);
  assertEquals(back?.package, meta?.package);
  assertEquals(back?.tools, meta?.tools);
  assertStringIncludes(warnings.join("\n"), "registry unreachable");
  assertEquals(await offline.list(), [seeded], "offline, the pinned servers are listed");
});

/**
 * A test registry seeded from the repository's registry/ folder (std modules, MCP metadata), the
 * name of one stdio server it serves, and a workspace folder (removed on dispose).
 */
async function seededRegistry() {
  const dir = join(import.meta.dirname!, "..", "..", "..", "..", "registry");
  const reg: TestRegistry = await testRegistry();
  const routing = await loadRoutingTable(join(dir, "routing.json"));
  await seedRegistry(reg.store, { registryDir: dir, routing });
  const res = await reg.fetch(`${reg.url}/mcp?type=stdio`);
  const items = (await res.json()).items as { fqdn: string }[];
  assert(items.length > 0, "the repository registry has stdio metadata");
  const ws = await Deno.makeTempDir({ prefix: "pml-meta-" });
  return {
    reg,
    ws,
    seeded: items[0].fqdn.split(".")[2],
    async [Symbol.asyncDispose]() {
      await Deno.remove(ws, { recursive: true });
      await reg[Symbol.asyncDispose]();
    },
  };
}

Deno.test("RegistryMetadataSource: calls that arrive together share one request, also when the answer expires", async () => {
  await using t = await seededRegistry();
  const { reg, ws, seeded } = t;
  const lock = await Lockfile.open(ws);
  let clock = 1_000_000;
  const source = new RegistryMetadataSource({
    client: new RegistryClient({ registries: [reg.url], fetch: reg.fetch }),
    cache: new ModuleCache(join(ws, "home")),
    lockfile: () => Promise.resolve(lock),
    now: () => clock,
  });
  const asked = () => reg.requests.filter((r) => r === `GET /mcp/pml.mcp.${seeded}.server`);
  const together = () => Promise.all(Array.from({ length: 16 }, () => source.get(seeded)));

  const first = await together();
  assertEquals(asked().length, 1, reg.requests.join("\n"));
  assert(first.every((m) => m?.server === seeded && m === first[0]));
  clock += 3_600_000; // past any max-age: asked again, once
  const second = await together();
  assertEquals(asked().length, 2, reg.requests.join("\n"));
  assertEquals(second.map((m) => m?.fqdn), first.map((m) => m?.fqdn));
  // A failure reaches every caller, and the next call asks again.
  reg.down = true;
  clock += 3_600_000;
  const offline = await together();
  assertEquals(offline, Array(16).fill(undefined), "unreachable and not pinned: unknown here");
  assertEquals(asked().length, 3);
});
