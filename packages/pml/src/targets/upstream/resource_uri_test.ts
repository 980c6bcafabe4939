/** The aggregated resource URIs (docs/surface.md "Resource URIs"): each round-trips to its owner. */
import { assertEquals } from "../../testing/assert.ts";
import { blockWithPmlUris, fromPmlUri, metaWithPmlUris, toPmlUri } from "./resource_uri.ts";

Deno.test("resource URIs: the owner first in the authority, the scheme kept, each read back exactly", () => {
  const cases: [string, string][] = [
    ["demo://resource/static/1", "demo://everything/resource/static/1"],
    ["file:///home/a/notes.md", "file://everything//home/a/notes.md"],
    ["urn:isbn:0451", "urn://everything/:isbn:0451"],
    ["ui://weather/app.html", "ui://everything/weather/app.html"],
    ["demo://other/secret", "demo://everything/other/secret"],
    ["demo://resource/dynamic/text/{id}", "demo://everything/resource/dynamic/text/{id}"],
  ];
  for (const [own, pml] of cases) {
    assertEquals(toPmlUri("everything", own), pml);
    assertEquals(fromPmlUri(pml), { server: "everything", uri: own });
  }
  // What is no PML URI reads back to no server.
  assertEquals(fromPmlUri("no-scheme"), undefined);
  assertEquals(fromPmlUri("urn:isbn:0451"), undefined);
  assertEquals(fromPmlUri("demo://everything"), undefined);
});

Deno.test("resource URIs in content blocks and an MCP App's _meta are made PML's; other blocks stay the same object", () => {
  const text = { type: "text", text: "x" };
  assertEquals(blockWithPmlUris("s", text) === text, true);
  assertEquals(blockWithPmlUris("s", { type: "resource_link", uri: "a://b", name: "n" }), {
    type: "resource_link",
    uri: "a://s/b",
    name: "n",
  });
  assertEquals(
    blockWithPmlUris("s", { type: "resource", resource: { uri: "a://b", text: "t" } }),
    { type: "resource", resource: { uri: "a://s/b", text: "t" } },
  );
  assertEquals(
    metaWithPmlUris("s", { ui: { resourceUri: "ui://app/main.html" }, "ui/resourceUri": "ui://x" }),
    { ui: { resourceUri: "ui://s/app/main.html" }, "ui/resourceUri": "ui://s/x" },
  );
  assertEquals(metaWithPmlUris("s", undefined), undefined);
});
