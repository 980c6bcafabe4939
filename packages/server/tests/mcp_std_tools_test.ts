/**
 * The MCP endpoint through the SDK client, in process (createApp() + the transport's fetch):
 * tools/list, the json/math/text std tools run on the server, errors as isError results.
 */
import assert from "node:assert/strict";
import { callTool, connectClient, mcpTestServer, type ToolResult } from "./mcp_helpers.ts";

interface Listed {
  tools: { name: string; _meta: Record<string, unknown>; annotations?: Record<string, unknown> }[];
}

async function withClient(
  fn: (
    call: (name: string, args: object) => Promise<ToolResult>,
    list: () => Promise<Listed>,
  ) => Promise<void>,
) {
  const server = await mcpTestServer();
  const client = await connectClient({ app: server.app }, {
    authorization: `Bearer ${server.key}`,
  });
  try {
    await fn(
      (name, args) => callTool(client, name, args as Record<string, unknown>),
      () => client.listTools() as Promise<Listed>,
    );
  } finally {
    await client.close();
    await server.close();
  }
}

Deno.test("tools/list has pml__search, the server std tools and http tools, not client tools", async () => {
  await withClient(async (_call, list) => {
    const { tools } = await list();
    const names = tools.map((t) => t.name);
    for (
      const name of [
        "pml__search",
        "json__parse",
        "json__query",
        "math__evaluate",
        "text__slugify",
        "tavily__tavily-search",
      ]
    ) {
      assert.ok(names.includes(name), `missing ${name} in ${names.join(", ")}`);
    }
    assert.ok(!names.some((n) => n.startsWith("filesystem__") || n.startsWith("memory__")));
    // Test fixtures are not served: nothing proxied to a loopback test server.
    assert.ok(!names.some((n) => n.startsWith("everything-http__")), names.join(", "));
    const tavily = tools.find((t) => t.name === "tavily__tavily-search")!;
    assert.deepEqual(tavily._meta["pml/envRequired"], ["TAVILY_API_KEY"]);
    assert.equal(tavily._meta["pml/toolId"], "tavily:tavily-search");
  });
});

Deno.test("the pure tools (json, math, text, pml__search) are annotated read-only; http and execute are not", async () => {
  await withClient(async (_call, list) => {
    const { tools } = await list();
    const pure = tools.filter((t) =>
      /^(json|math|text)__/.test(t.name) || t.name === "pml__search"
    );
    assert.ok(pure.length >= 10, pure.map((t) => t.name).join(", "));
    for (const tool of pure) {
      assert.deepEqual(tool.annotations, {
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      }, tool.name);
    }
    for (const name of ["tavily__tavily-search", "pml__execute"]) {
      assert.equal(tools.find((t) => t.name === name)?.annotations, undefined, name);
    }
  });
});

Deno.test("json, math and text tools answer text + structuredContent, by exposed name or tool id", async () => {
  await withClient(async (call) => {
    const parsed = await call("json__parse", { text: '{"a":[1,{"b":"x"}]}' });
    assert.deepEqual(parsed.structuredContent, { a: [1, { b: "x" }] });
    assert.equal(parsed.content[0].text, '{"a":[1,{"b":"x"}]}');
    const queried = await call("json:query", { value: { a: [1, { b: "x" }] }, path: "a[1].b" });
    assert.deepEqual(queried.structuredContent, { result: "x" });
    assert.equal(queried.content[0].text, "x");
    const math = await call("math__evaluate", {
      expression: "2 * (3 + x) ^ 2 / sqrt(16)",
      variables: { x: 1 },
    });
    assert.deepEqual(math.structuredContent, { result: 8 });
    const stats = await call("math:stats", { numbers: [1, 2, 3, 4] });
    assert.equal(stats.structuredContent.mean, 2.5);
    assert.equal(stats.structuredContent.median, 2.5);
    const slug = await call("text__slugify", { text: "Héllo, Wörld! PML 2" });
    assert.equal(slug.content[0].text, "hello-world-pml-2");
    const cased = await call("text:convert_case", { text: "parseHTTPResponse now", to: "snake" });
    assert.equal(cased.content[0].text, "parse_http_response_now");
    const replaced = await call("text:replace", { text: "a.b.c", search: ".", replacement: "/" });
    assert.deepEqual(replaced.structuredContent, { text: "a/b/c", replacements: 2 });
  });
});

Deno.test("math:evaluate never evaluates code", async () => {
  await withClient(async (call) => {
    for (
      const expression of [
        "constructor.constructor('return 1')()",
        "globalThis",
        "1; Deno.exit(1)",
        "__proto__",
        "toString()",
      ]
    ) {
      const result = await call("math:evaluate", { expression });
      assert.equal(result.isError, true, expression);
      assert.equal(result.structuredContent.code, "CODE_ERROR");
    }
  });
});

Deno.test("failures are isError results with a code: bad arguments, unknown and client tools", async () => {
  await withClient(async (call) => {
    const bad = await call("json__parse", { text: "{nope" });
    assert.equal(bad.isError, true);
    assert.match(bad.structuredContent.message, /"json:parse" failed: Cannot parse JSON/);
    // Arguments the tool cannot take: the code the package gives a local tool's (issue 41 item 15).
    const args = await call("math__sum", { numbers: "x" });
    assert.equal(args.isError, true);
    assert.equal(args.structuredContent.code, "INVALID_ARGUMENTS");
    assert.match(args.structuredContent.message, /^Invalid arguments for "math:sum": Argument/);
    const unknown = await call("nope__nothing", {});
    assert.equal(unknown.structuredContent.code, "UNKNOWN_TOOL");
    const client = await call("filesystem:read_file", { path: "/etc/passwd" });
    assert.equal(client.structuredContent.code, "CLIENT_TOOLS_REQUIRE_PACKAGE");
    const missing = await call("tavily__tavily-search", { query: "x" });
    assert.equal(missing.isError, true);
    assert.equal(missing.structuredContent.code, "API_KEY_REQUIRED");
    assert.match(missing.structuredContent.message, /TAVILY_API_KEY/);
    assert.match(missing.structuredContent.message, /\.pml\.json "env"/);
  });
});
