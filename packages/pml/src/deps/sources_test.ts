import { join } from "node:path";
import { assertEquals } from "../testing/assert.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import { loadConfig } from "../config/config.ts";
import { CatalogueSource, ChainSource, PrivateMcpSource } from "./sources.ts";
import type { DependencyMeta, MetadataSource } from "./metadata.ts";

Deno.test("sources: peek answers only what get has loaded, the same object; a chain waits for a source that must be asked", async () => {
  const entry = JSON.parse(
    Deno.readTextFileSync(join(import.meta.dirname!, "../../../../registry/mcp/memory.json")),
  );
  await using ws = tempWorkspace({ private_mcps: { mine: entry } });
  const c = loadConfig({ env: { PML_WORKSPACE: ws.dir }, cwd: ws.dir, home: ws.home });
  const own = new PrivateMcpSource(c.privateMcps);
  const catalogue = new CatalogueSource();
  const chain = new ChainSource([own, catalogue]);
  // Nothing loaded yet: a look-up is needed (undefined), except what a source cannot know (null).
  assertEquals(own.peek("mine"), undefined);
  assertEquals(own.peek("memory"), null);
  assertEquals(catalogue.peek("memory"), undefined);
  assertEquals(chain.peek("memory"), undefined);
  const mine = await chain.get("mine");
  const memory = await chain.get("memory");
  // Loaded: the very objects `get` answered (the stdio target's checks are kept by identity).
  assertEquals(own.peek("mine") === mine, true);
  assertEquals(chain.peek("mine") === mine, true);
  assertEquals(chain.peek("memory") === memory, true);
  assertEquals(chain.peek("nosuchserver"), null);
  // A source without peek (a registry client) is asked each time: the chain cannot answer for it.
  const asked: MetadataSource = {
    list: () => Promise.resolve([]),
    get: () => Promise.resolve(undefined as DependencyMeta | undefined),
  };
  assertEquals(new ChainSource([own, asked, catalogue]).peek("memory"), undefined);
  assertEquals(new ChainSource([own, asked, catalogue]).peek("mine") === mine, true);
});
