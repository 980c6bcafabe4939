/** Seeding from the repository's real registry/ folder, idempotently, with recomputed hashes. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadRoutingTable } from "../src/registry/routing_table.ts";
import { seedRegistry } from "../src/registry/seed.ts";
import { SqliteStore } from "../src/store/sqlite_store.ts";
import { FIXTURE_REGISTRY, REPO_REGISTRY, sha256, testServer } from "./helpers.ts";

const NPM_SERVERS = ["memory", "filesystem", "everything", "sequential-thinking"];

Deno.test("the repository registry seeds std actions, npm stdio servers and http servers", async () => {
  const server = await testServer({ registryDir: REPO_REGISTRY });
  try {
    // Every std module action is an entry serving the module file bytes.
    for await (const file of Deno.readDir(join(REPO_REGISTRY, "std"))) {
      if (
        !file.name.endsWith(".ts") || file.name.startsWith("_") || file.name.endsWith("_test.ts")
      ) continue;
      const path = join(REPO_REGISTRY, "std", file.name);
      const module = await import(`file://${path}`);
      const bytes = await Deno.readFile(path);
      const hash = await sha256(bytes);
      const actions = Object.keys(module.__meta__.tools);
      assert.ok(actions.length > 0, file.name);
      for (const action of actions) {
        const fqdn = `pml.std.${module.__meta__.namespace}.${action}.${hash.slice(0, 4)}`;
        const response = await server.request(`/mcp/${fqdn}`);
        assert.equal(response.status, 200, fqdn);
        assert.deepEqual(new Uint8Array(await response.arrayBuffer()), bytes);
        const routing = server.routing.client.includes(module.__meta__.namespace)
          ? "client"
          : "server";
        assert.equal(response.headers.get("x-pml-routing"), routing);
      }
    }
    // npm servers carry the real sha512 integrity of package-lock.json and real tool names.
    const lock = JSON.parse(await Deno.readTextFile(join(REPO_REGISTRY, "../package-lock.json")));
    for (const name of NPM_SERVERS) {
      const redirect = await server.request(`/mcp/pml.mcp.${name}.server`);
      const meta = await (await server.request(redirect.headers.get("location")!)).json();
      const locked = lock.packages[`node_modules/@modelcontextprotocol/server-${name}`];
      assert.equal(meta.type, "stdio");
      assert.equal(meta.routing, "client");
      assert.deepEqual(meta.package, {
        name: `@modelcontextprotocol/server-${name}`,
        version: "2026.8.31",
        integrity: locked.integrity,
      });
      assert.ok(meta.install.args.includes(`@modelcontextprotocol/server-${name}@2026.8.31`));
      assert.ok(meta.tools.length > 0);
      for (const tool of meta.tools) assert.ok(tool.name.startsWith(`${name}:`), tool.name);
    }
    const memory = await (await server.request("/mcp?tool=memory:create_entities")).json();
    assert.equal(memory.total, 1);
    const http = await (await server.request("/mcp?type=http")).json();
    assert.deepEqual(
      http.items.map((i: { fqdn: string }) => i.fqdn.slice(0, -5)).sort(),
      ["pml.mcp.tavily.server"],
    );
    // What pml-server serves proxies to real APIs, never to a loopback test server.
    for (const item of http.items as { fqdn: string }[]) {
      const meta = await (await server.request(`/mcp/${item.fqdn}`)).json();
      assert.ok(!/127\.0\.0\.1|localhost/.test(meta.proxyTo), meta.proxyTo);
    }
  } finally {
    await server.close();
  }
});

Deno.test("seeding twice changes nothing; a changed or removed file is picked up", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pml-seed-" });
  const store = new SqliteStore(":memory:");
  try {
    await Deno.mkdir(join(dir, "std"));
    await Deno.mkdir(join(dir, "mcp"));
    const source = await Deno.readTextFile(join(FIXTURE_REGISTRY, "std/demo.ts"));
    await Deno.writeTextFile(join(dir, "std/demo.ts"), source);
    await Deno.copyFile(join(FIXTURE_REGISTRY, "mcp/memory.json"), join(dir, "mcp/memory.json"));
    await store.migrate();
    const routing = await loadRoutingTable(join(FIXTURE_REGISTRY, "routing.json"));
    const first = await seedRegistry(store, { registryDir: dir, routing });
    assert.deepEqual(first.added, [
      "pml.mcp.memory.server",
      "pml.std.demo.add",
      "pml.std.demo.echo",
    ]);
    const version = await store.registryVersion();
    const second = await seedRegistry(store, { registryDir: dir, routing });
    assert.deepEqual(second, { added: [], updated: [], removed: [], unchanged: 3 });
    assert.equal(await store.registryVersion(), version);

    // A new file version (written to a new path: the import cache is per URL) gets a new hash.
    await Deno.remove(join(dir, "std/demo.ts"));
    await Deno.mkdir(join(dir, "v2/std"), { recursive: true });
    await Deno.writeTextFile(join(dir, "v2/std/demo.ts"), source + "\n// v2\n");
    const third = await seedRegistry(store, { registryDir: join(dir, "v2"), routing });
    assert.deepEqual(third.updated, ["pml.std.demo.add", "pml.std.demo.echo"]);
    assert.deepEqual(third.removed, ["pml.mcp.memory.server"]);
    assert.equal(
      (await store.getEntry("pml.std.demo.echo"))?.hash,
      await sha256(source + "\n// v2\n"),
    );
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an invalid registry file fails the seed with its path, before anything is written", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pml-seed-" });
  const store = new SqliteStore(":memory:");
  try {
    await Deno.mkdir(join(dir, "std"));
    await Deno.mkdir(join(dir, "mcp"));
    await Deno.copyFile(join(FIXTURE_REGISTRY, "std/demo.ts"), join(dir, "std/demo.ts"));
    await Deno.writeTextFile(
      join(dir, "std/broken.ts"),
      "export const __meta__ = { namespace: 'broken', description: 'x', tools: { go: { description: 'go', inputSchema: {} } } };\n",
    );
    await store.migrate();
    const routing = await loadRoutingTable(join(FIXTURE_REGISTRY, "routing.json"));
    await assert.rejects(
      () => seedRegistry(store, { registryDir: dir, routing }),
      /broken\.ts" lists action "go" in __meta__\.tools but exports no function "go"/,
    );
    await Deno.remove(join(dir, "std/broken.ts"));
    await Deno.writeTextFile(
      join(dir, "mcp/bad.json"),
      JSON.stringify({ type: "stdio", description: "x" }),
    );
    await assert.rejects(
      () => seedRegistry(store, { registryDir: dir, routing }),
      /Invalid MCP metadata ".*bad\.json"/,
    );
    assert.equal((await store.listEntries({ offset: 0, limit: 10 })).total, 0);
  } finally {
    await store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
