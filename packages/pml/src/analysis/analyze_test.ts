/** Routing decisions (tech-spec AC1–AC2), errors, `toolsUsed` and the wire DAG. */
import { deepStrictEqual, equal } from "node:assert/strict";
import { analyzeCode, toExecuteLocallyDag } from "./mod.ts";
import { analyze, routeOf } from "./testdata/helpers.ts";

Deno.test("server-only tools route to the server", async () => {
  const a = await analyze(`
    const data = await mcp.json.parse({ text: '{"q":"deno"}' });
    return await mcp.tavily.search({ query: data.q });`);
  equal(a.routing, "server");
  deepStrictEqual(a.toolsUsed, ["json:parse", "tavily:search"]);
  deepStrictEqual(a.serverTools, ["json:parse", "tavily:search"]);
  deepStrictEqual(a.clientTools, []);
});

Deno.test("client-only tools route to the client", async () => {
  const a = await analyze(
    `return await mcp.filesystem.read_file({ path: "/home/user/file.txt" });`,
  );
  equal(a.routing, "client");
  deepStrictEqual(a.clientTools, ["filesystem:read_file"]);
  deepStrictEqual(a.serverTools, []);
});

Deno.test("mixed tools route to the client and split the tool lists", async () => {
  const a = await analyze(`
    const text = await mcp.filesystem.read_file({ path: "data.json" });
    const parsed = await mcp.json.parse({ text });
    await mcp.shell.exec({ cmd: "echo done" });
    return parsed;`);
  equal(a.routing, "client");
  deepStrictEqual(a.toolsUsed, ["filesystem:read_file", "json:parse", "shell:exec"]);
  deepStrictEqual(a.clientTools, ["filesystem:read_file", "shell:exec"]);
  deepStrictEqual(a.serverTools, ["json:parse"]);
});

Deno.test("unknown tools follow routeOf (client by default)", async () => {
  equal((await analyze(`await mcp.my_private.tool({});`)).routing, "client");
});

Deno.test("code without tools routes to the server", async () => {
  for (const code of [`return 1 + 1;`, `// nothing to do`, `;`]) {
    const a = await analyze(code);
    equal(a.routing, "server", code);
    deepStrictEqual([a.tasks, a.toolsUsed, a.dynamic], [[], [], []], code);
  }
});

Deno.test("toolsUsed is unique, in order of first appearance; routeOf asked once per tool", async () => {
  const asked: string[] = [];
  const a = await analyzeCode(
    `await mcp.b.x({}); await mcp.a.y({}); await mcp.b.x({}); await mcp.a.y({}); await mcp.c.z({});`,
    { routeOf: (id) => (asked.push(id), routeOf(id)) },
  );
  equal(a.ok, true);
  if (!a.ok) return;
  equal(a.tasks.length, 5);
  deepStrictEqual(a.toolsUsed, ["b:x", "a:y", "c:z"]);
  deepStrictEqual(asked, ["b:x", "a:y", "c:z"]);
});

Deno.test("empty or whitespace code is EMPTY_CODE", async () => {
  for (const code of ["", "   \n\t  "]) {
    deepStrictEqual(await analyzeCode(code, { routeOf }), {
      ok: false,
      error: { code: "EMPTY_CODE", message: "Cannot analyse code: it is empty" },
    });
  }
});

Deno.test("a syntax error is SYNTAX_ERROR with the parser's message and a 1-based position", async () => {
  const a = await analyzeCode(`const a = 1;\nconst b = ;\nreturn b;`, { routeOf });
  deepStrictEqual(a, {
    ok: false,
    error: {
      code: "SYNTAX_ERROR",
      message: "Cannot parse code: Unexpected token at line 2, column 11",
      line: 2,
      column: 11,
    },
  });
});

Deno.test("import and export declarations are syntax errors in a function body", async () => {
  const a = await analyzeCode(`const x = 1;\n  import fs from "node:fs";`, { routeOf });
  equal(a.ok, false);
  if (a.ok) return;
  deepStrictEqual([a.error.code, a.error.line, a.error.column], ["SYNTAX_ERROR", 2, 3]);
  const b = await analyzeCode(`export const x = 1;`, { routeOf });
  equal(!b.ok && b.error.code, "SYNTAX_ERROR");
});

Deno.test("toExecuteLocallyDag gives the DESIGN §9 wire shape", async () => {
  const a = await analyze(`
    const [x, y] = await Promise.all([mcp.filesystem.read_file({}), mcp.json.parse({})]);
    return await mcp.shell.exec({ cmd: x + y });`);
  const dag = toExecuteLocallyDag(a);
  deepStrictEqual(JSON.parse(JSON.stringify(dag)), {
    tasks: [
      { id: "t1", tool: "filesystem:read_file", dependsOn: [] },
      { id: "t2", tool: "json:parse", dependsOn: [] },
      { id: "t3", tool: "shell:exec", dependsOn: ["t1", "t2"] },
    ],
  });
});
