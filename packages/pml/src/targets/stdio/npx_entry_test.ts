/**
 * The seed's own example of a private MCP: `"install": {"command": "npx", "args": ["<package>"]}`
 * with declared tool names. Before, `npx` ran inside the sandbox (no network) and the call timed
 * out after 30 s. Now the entry is pinned to the package npm resolves, installed by PML (its
 * sha512 verified), run under Deno in the OS sandbox, and its declared names are listed with the
 * definitions the server gives itself once pinned. The real server-memory, from npm.
 */
import { assert, assertEquals, assertStringIncludes } from "../../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../testing/workspace.ts";

const VERSION = "2026.8.31";

Deno.test("seed example: a private `npx <package>` entry with declared names installs, runs and lists the server's own definitions", async () => {
  await using ws = tempWorkspace({
    approvals: "agent",
    permissions: { allow: ["internal-db"], ask: [], deny: [] },
    private_mcps: {
      "internal-db": {
        type: "stdio",
        install: { command: "npx", args: [`@modelcontextprotocol/server-memory@${VERSION}`] },
        tools: ["internal-db:read_graph", "internal-db:create_entities"],
      },
    },
  });
  const env = { npm_config_cache: Deno.env.get("npm_config_cache") ?? "" };
  await using g = await gatewayFor(ws, {
    env: Object.fromEntries(Object.entries(env).filter(([, v]) => v)),
    elicit: () => "yes",
  });
  const r = await g.client.callTool({ name: "internal-db__read_graph", arguments: {} });
  assert(!r.isError, textOf(r));
  assertStringIncludes(textOf(r), "entities");
  const deps = JSON.parse(ws.read(".pml/deps.json")).installed["internal-db"];
  assertEquals(deps.mode, "deno", "run as an npm package under Deno, not through npx");
  assertEquals(deps.version, VERSION);
  const lock = JSON.parse(ws.read(".pml/mcp.lock")).entries["pml.mcp.internal-db.server"];
  assertEquals(lock.package.version, VERSION);
  assert(lock.tools.read_graph);
  const after = (await g.client.listTools()).tools.find((t) =>
    t.name === "internal-db__read_graph"
  );
  assertEquals(after?.description, "Read the entire knowledge graph");
  assertEquals(after?.annotations?.readOnlyHint, true, "its own annotations, pinned");
});
