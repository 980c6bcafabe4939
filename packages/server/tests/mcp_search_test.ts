/**
 * `pml:search` through the MCP endpoint: ranking quality on a labelled set of intents over the
 * repository's real registry (precision@3, success@3 and MRR printed and held above a floor),
 * the shape of the results, the routing filter and the rebuild after a publish.
 */
import assert from "node:assert/strict";
import { capabilityCode } from "./helpers.ts";
import { callTool, connectClient, mcpTestServer, type ToolResult } from "./mcp_helpers.ts";

/** Intent → the tool ids a user would accept as a right answer. */
const LABELLED: readonly [string, readonly string[]][] = [
  ["read a file", ["filesystem:read_file", "filesystem:read_text_file"]],
  ["remember facts about entities", ["memory:create_entities", "memory:add_observations"]],
  ["search the web", ["tavily:tavily-search"]],
  ["parse json", ["json:parse"]],
  ["calculate an arithmetic expression", ["math:evaluate"]],
  ["list files in a directory", ["filesystem:list_directory", "filesystem:directory_tree"]],
  ["run a shell command", ["shell:exec"]],
  ["write text to a file", ["filesystem:write_file"]],
  ["average of numbers", ["math:mean", "math:stats"]],
  ["convert a string to snake_case", ["text:convert_case"]],
  ["make a url slug from a title", ["text:slugify"]],
  ["get a value from a json document by path", ["json:query"]],
  ["extract the content of web pages", ["tavily:tavily-extract"]],
  ["think step by step", ["sequential-thinking:sequentialthinking"]],
  ["delete a relation in the knowledge graph", ["memory:delete_relations"]],
  ["count words in a text", ["text:count"]],
  ["find files matching a name pattern", ["filesystem:search_files"]],
  ["replace text in a string", ["text:replace"]],
  ["crawl a website", ["tavily:tavily-crawl"]],
  ["move or rename a file", ["filesystem:move_file"]],
  ["standard deviation statistics", ["math:stats"]],
  ["pretty print json", ["json:stringify"]],
];

Deno.test("pml:search ranks the labelled intents: success@3 >= 0.9, MRR >= 0.8", async () => {
  const server = await mcpTestServer();
  const client = await connectClient({ app: server.app }, {
    authorization: `Bearer ${server.key}`,
  });
  try {
    let precision = 0, success = 0, reciprocal = 0;
    const misses: string[] = [];
    for (const [query, relevant] of LABELLED) {
      const result = await callTool(client, "pml__search", { query, limit: 10 });
      const ids = result.structuredContent.results!.map((r) => r.id);
      const rank = ids.findIndex((id) => relevant.includes(id)) + 1;
      precision += ids.slice(0, 3).filter((id) => relevant.includes(id)).length /
        Math.min(3, relevant.length);
      if (rank >= 1 && rank <= 3) success += 1;
      else misses.push(`"${query}" → ${ids.slice(0, 3).join(", ")}`);
      reciprocal += rank ? 1 / rank : 0;
    }
    const n = LABELLED.length;
    const report =
      `pml:search on ${n} labelled intents: precision@3 ${(precision / n).toFixed(3)}, ` +
      `success@3 ${(success / n).toFixed(3)}, MRR ${(reciprocal / n).toFixed(3)}`;
    console.log(report + (misses.length ? `; misses: ${misses.join("; ")}` : ""));
    assert.ok(success / n >= 0.9, report);
    assert.ok(reciprocal / n >= 0.8, report);
  } finally {
    await client.close();
    await server.close();
  }
});

Deno.test("search results carry name, description, input schema, routing, one per tool id", async () => {
  const server = await mcpTestServer();
  const client = await connectClient({ app: server.app }, {
    authorization: `Bearer ${server.key}`,
  });
  try {
    const result = await callTool(client, "pml:search", { query: "read file", limit: 50 });
    const results = result.structuredContent.results!;
    const ids = results.map((r) => r.id);
    assert.equal(new Set(ids).size, ids.length, "duplicate ids");
    const read = results.find((r) => r.id === "filesystem:read_file")! as unknown as Record<
      string,
      unknown
    >;
    assert.equal(read.name, "filesystem__read_file");
    assert.equal(read.routing, "client");
    assert.equal(read.kind, "std"); // the std module wins over the stdio server's tool of that id
    assert.match(read.fqdn as string, /^pml\.std\.filesystem\.read_file\.[0-9a-f]{4}$/);
    assert.equal((read.inputSchema as { type: string }).type, "object");
    assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);

    const server_only = await callTool(client, "pml:search", {
      query: "search the web or read a file",
      routing: "server",
    });
    assert.ok(server_only.structuredContent.results!.every((r) => r.routing === "server"));
    assert.equal(server_only.structuredContent.results![0].id, "tavily:tavily-search");
    assert.deepEqual(
      (server_only.structuredContent.results![0] as unknown as { envRequired: string[] })
        .envRequired,
      ["TAVILY_API_KEY"],
    );

    const bad: ToolResult = await callTool(client, "pml:search", { query: "" });
    assert.equal(bad.isError, true);
    assert.equal(bad.structuredContent.code, "INVALID_ARGUMENTS");
  } finally {
    await client.close();
    await server.close();
  }
});

Deno.test("a published capability is found by search right after publishing", async () => {
  const server = await mcpTestServer();
  const client = await connectClient({ app: server.app }, {
    authorization: `Bearer ${server.key}`,
  });
  try {
    const query = "summarise quarterly invoices";
    const before = await callTool(client, "pml:search", { query });
    assert.ok(!before.structuredContent.results!.some((r) => r.id === "billing:summarise"));
    const published = await server.publish({
      org: "acme",
      project: "ops",
      namespace: "billing",
      action: "summarise",
      code: capabilityCode("summarise"),
      description: "Summarise the quarterly invoices of a customer",
      tools_used: ["json:parse"],
    });
    assert.equal(published.status, 201);
    const after = await callTool(client, "pml:search", { query });
    const hit = after.structuredContent.results![0];
    assert.equal(hit.id, "billing:summarise");
    assert.equal(hit.kind, "capability");
    assert.equal(hit.routing, "server");
  } finally {
    await client.close();
    await server.close();
  }
});
