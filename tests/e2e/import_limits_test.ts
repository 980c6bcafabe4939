/**
 * `bin/pml import` is bounded: at most 100 servers per import and 200 `private_mcps` per
 * `.pml.json`, refused before anything is resolved, set up or written, with the limit in the
 * message (a 20,000-server client file ran for over 180 s and wrote a 44 MB `.pml.json`). A
 * hand-written `.pml.json` past the limit is refused on load with the same number.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { runPml } from "./_spawn.ts";

/** `n` remote servers named `<prefix><i>`, as a client file holds them. */
function remotes(n: number, prefix = "s"): Record<string, unknown> {
  return Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`${prefix}${i}`, {
      type: "http",
      url: `https://${prefix}${i}.example.test/mcp`,
    }]),
  );
}

Deno.test("e2e import of 20,000 servers: refused at once with the limit, nothing written", async () => {
  await using ws = tempWorkspace();
  ws.write(".mcp.json", JSON.stringify({ mcpServers: remotes(20_000) }));
  const run = await runPml(ws, ["import", "--yes", "--move"]);
  assert(run.code !== 0, run.text.slice(0, 500));
  assertStringIncludes(run.text, "Found 20000 MCP servers to import");
  assertStringIncludes(run.text, "at most 100 at a time");
  assert(run.text.length < 2000, `a few lines, not one a server (${run.text.length} characters)`);
  assert(!(await Deno.stat(join(ws.dir, ".pml.json")).catch(() => false)), "no .pml.json");
  assertEquals(Object.keys(JSON.parse(ws.read(".mcp.json")).mcpServers).length, 20_000);
});

Deno.test("e2e import: 100 servers are imported; past 200 per .pml.json is refused, and so is such a file on load", async () => {
  await using ws = tempWorkspace();
  ws.write(".mcp.json", JSON.stringify({ mcpServers: remotes(100) }));
  const first = await runPml(ws, ["import", "--yes"]);
  assertEquals(first.code, 0, first.text.slice(-500));
  assertEquals(Object.keys(JSON.parse(ws.read(".pml.json")).private_mcps).length, 100);
  ws.write(".mcp.json", JSON.stringify({ mcpServers: { ...remotes(100), ...remotes(100, "t") } }));
  const second = await runPml(ws, ["import", "--yes", "--from", "claude"]);
  assertEquals(second.code, 0, second.text.slice(-500));
  assertEquals(Object.keys(JSON.parse(ws.read(".pml.json")).private_mcps).length, 200);
  ws.write(".mcp.json", JSON.stringify({ mcpServers: remotes(1, "u") }));
  const third = await runPml(ws, ["import", "--yes"]);
  assert(third.code !== 0, third.text);
  assertStringIncludes(third.text, "limit of 200 servers per .pml.json");
  assertEquals(Object.keys(JSON.parse(ws.read(".pml.json")).private_mcps).length, 200);

  const pml = JSON.parse(ws.read(".pml.json"));
  ws.write(
    ".pml.json",
    JSON.stringify({ ...pml, private_mcps: { ...pml.private_mcps, ...remotes(1, "u") } }),
  );
  const status = await runPml(ws, ["status"]);
  assertStringIncludes(status.text, "at most 200 servers per .pml.json");
});
