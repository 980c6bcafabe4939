import { Client } from "./client.ts";
import { InMemoryTransport } from "./in_memory.ts";
import { Server } from "./server.ts";
import { CallToolRequestSchema, ListToolsRequestSchema } from "./types.ts";
import { lazySchemaValidator } from "./validation.ts";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../testing/assert.ts";

Deno.test("lazySchemaValidator: validates as the SDK's Ajv does, one schema cache per instance", () => {
  const a = lazySchemaValidator();
  const b = lazySchemaValidator();
  const needsX = { $id: "urn:pml:test", type: "object", required: ["x"] } as const;
  const needsY = { $id: "urn:pml:test", type: "object", required: ["y"] } as const;
  assertEquals(a.getValidator(needsX)({ x: 1 }).valid, true);
  const bad = a.getValidator(needsX)({ y: 1 });
  assert(!bad.valid);
  assertStringIncludes(bad.errorMessage ?? "", "x");
  // The same $id with another schema in another client is that client's own.
  assertEquals(b.getValidator(needsY)({ y: 1 }).valid, true);
  assertEquals(b.getValidator(needsY)({ x: 1 }).valid, false);
});

Deno.test("lazySchemaValidator: a Client given it still refuses structured output that breaks the tool's outputSchema", async () => {
  const server = new Server({ name: "s", version: "1" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [{
      name: "count",
      inputSchema: { type: "object" },
      outputSchema: {
        type: "object",
        properties: { n: { type: "number" } },
        required: ["n"],
      },
    }],
  }));
  let n: unknown = 1;
  server.setRequestHandler(CallToolRequestSchema, () => ({
    content: [{ type: "text", text: String(n) }],
    structuredContent: { n },
  }));
  const client = new Client({ name: "c", version: "1" }, {
    jsonSchemaValidator: lazySchemaValidator(),
  });
  const [ct, st] = InMemoryTransport.createLinkedPair();
  await Promise.all([server.connect(st), client.connect(ct)]);
  try {
    await client.listTools();
    assertEquals((await client.callTool({ name: "count" })).structuredContent, { n: 1 });
    n = "one";
    await assertRejects(() => client.callTool({ name: "count" }), Error, "does not match");
  } finally {
    await client.close();
  }
});
