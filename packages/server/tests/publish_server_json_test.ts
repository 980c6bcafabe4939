/**
 * `pml-server publish <server.json>`: registry entries from the MCP Registry's own format. The npm
 * package is pinned with npm itself (version and sha512); the remote's tools are read from the
 * real server-everything over Streamable HTTP. The entry is then served like any metadata file.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runCli } from "../src/cli/run_cli.ts";
import { openStore } from "../src/store/open_store.ts";
import { startUpstream } from "../../../tests/e2e/_cloud.ts";

const ROOT = join(import.meta.dirname!, "..", "..", "..");
const FIXTURE = join(ROOT, "tests", "fixtures", "import", "server.json");

async function setup() {
  const dir = await Deno.makeTempDir({ prefix: "pml-publish-" });
  const registryDir = join(dir, "registry");
  await Deno.mkdir(join(registryDir, "mcp"), { recursive: true });
  await Deno.copyFile(join(ROOT, "registry/routing.json"), join(registryDir, "routing.json"));
  const out: string[] = [];
  const io = {
    stdout: (l: string) => out.push(l),
    stderr: (l: string) => out.push(l),
    env: (n: string) => ({ PATH: Deno.env.get("PATH"), HOME: Deno.env.get("HOME") })[n],
    cwd: dir,
  };
  const flags = ["--registry-dir", registryDir, "--data-dir", join(dir, "data")];
  return {
    dir,
    registryDir,
    out,
    run: (args: string[]) => runCli([...args, ...flags], io),
    async entry(name: string) {
      const store = await openStore({ dataDir: join(dir, "data"), databaseUrl: undefined });
      try {
        return await store.getEntry(name);
      } finally {
        await store.close();
      }
    },
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

Deno.test("publish server.json (npm package): a stdio entry pinned to the exact version and sha512, no tool list (the client reads the server's own)", async () => {
  await using s = await setup();
  assert.equal(await s.run(["publish", FIXTURE]), 0, s.out.join("\n"));
  assert.match(s.out.join("\n"), /Published pml\.mcp\.server-memory\.server \(stdio\)/);
  const entry = await s.entry("pml.mcp.server-memory.server");
  assert.ok(entry, "served by the registry");
  const meta = JSON.parse(new TextDecoder().decode(entry.body));
  assert.equal(meta.type, "stdio");
  assert.equal(meta.package.name, "@modelcontextprotocol/server-memory");
  assert.equal(meta.package.version, "2026.8.31");
  assert.match(meta.package.integrity, /^sha512-/);
  assert.deepEqual(meta.install.args, ["-y", "@modelcontextprotocol/server-memory@2026.8.31"]);
  assert.deepEqual(meta.permissions.env, ["MEMORY_FILE_PATH"]);
  assert.deepEqual(meta.tools, []);
  const file = JSON.parse(
    await Deno.readTextFile(join(s.registryDir, "mcp", "server-memory.json")),
  );
  assert.equal(file.package.integrity, meta.package.integrity, "re-seeded from its file");
});

Deno.test("publish server.json (remote): an http entry whose tools come from the server itself; a document with an open input is refused", async () => {
  await using upstream = await startUpstream();
  await using s = await setup();
  const doc = join(s.dir, "remote.json");
  await Deno.writeTextFile(
    doc,
    JSON.stringify({
      $schema: "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json",
      name: "io.example/everything",
      description: "Everything, remote",
      version: "1.0.0",
      remotes: [{ type: "streamable-http", url: `${upstream.url}/u/mcp` }],
    }),
  );
  assert.equal(await s.run(["publish", doc]), 0, s.out.join("\n"));
  const entry = await s.entry("pml.mcp.everything.server");
  const meta = JSON.parse(new TextDecoder().decode(entry!.body));
  assert.equal(meta.type, "http");
  assert.equal(meta.proxyTo, `${upstream.url}/u/mcp`);
  assert.ok(meta.tools.some((t: { name: string }) => t.name === "everything:echo"));

  const open = join(s.dir, "open.json");
  await Deno.writeTextFile(
    open,
    JSON.stringify({
      name: "io.example/needs-path",
      description: "x",
      packages: [{
        registryType: "npm",
        identifier: "@modelcontextprotocol/server-filesystem",
        version: "2026.8.31",
        transport: { type: "stdio" },
        packageArguments: [{ type: "positional", valueHint: "allowed_directory" }],
      }],
    }),
  );
  assert.equal(await s.run(["publish", open]), 1);
  assert.match(s.out.join("\n"), /leaves argument allowed_directory open/);
});
