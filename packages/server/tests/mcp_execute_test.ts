/**
 * `pml:execute` on the server's MCP endpoint, through the SDK client against the real createApp():
 * the tech-spec's server cases (server-only code runs here, client tools go back to the package
 * as `execute_locally` or are refused for other clients), bad input, timeouts, unknown tools, and
 * sandboxed code trying to reach the server's files, network, env and processes.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { execSandboxPids } from "../../pml/src/execute/_test_helpers.ts";
import { processAlive } from "../../pml/src/procfs.ts";
import { mcpMetadataEntry } from "../src/registry/mcp_metadata.ts";
import { callTool, connectClient, mcpTestServer, type ToolResult } from "./mcp_helpers.ts";
import type { McpHandlerDeps } from "../src/mcp/mcp_handler.ts";
import type { Store } from "../src/store/store.ts";

type Call = (args: Record<string, unknown>) => Promise<ToolResult>;

async function withExecute(
  opts: { package?: boolean; handler?: Partial<McpHandlerDeps>; setup?: (s: Store) => unknown },
  fn: (execute: Call, call: (name: string, args: object) => Promise<ToolResult>) => Promise<void>,
) {
  const server = await mcpTestServer({ handler: opts.handler });
  await opts.setup?.(server.store);
  const headers: Record<string, string> = { authorization: `Bearer ${server.key}` };
  if (opts.package) headers["x-pml-client"] = "package";
  const client = await connectClient({ app: server.app }, headers);
  try {
    await fn(
      (args) => callTool(client, "pml__execute", args),
      (name, args) => callTool(client, name, args as Record<string, unknown>),
    );
  } finally {
    await client.close();
    await server.close();
  }
}

const body = (r: ToolResult) => JSON.parse(r.content[0].text);

const MIXED = `
  const text = await mcp.filesystem.read_file({ path: "data.json" });
  const data = await mcp.json.parse({ text });
  await mcp.filesystem.write_file({ path: "out.txt", content: String(data.n) });
  return data;`;

Deno.test("server execute: tools/list offers pml__execute with its input schema", async () => {
  const server = await mcpTestServer();
  const client = await connectClient({ app: server.app }, {
    authorization: `Bearer ${server.key}`,
  });
  try {
    const { tools } = await client.listTools();
    const execute = tools.find((t) => t.name === "pml__execute");
    assert.ok(execute, "pml__execute is listed");
    assert.deepEqual(execute.inputSchema.required, ["code"]);
    assert.equal(execute._meta?.["pml/toolId"], "pml:execute");
  } finally {
    await client.close();
    await server.close();
  }
});

Deno.test("server execute: code using only server tools runs on the server and returns its value", async () => {
  for (const pkg of [false, true]) {
    await withExecute({ package: pkg }, async (execute) => {
      const result = await execute({
        code: `
          const data = await mcp.json.parse({ text: '{"values":[3,4,5]}' });
          const total = await mcp.math.evaluate({ expression: data.values.join("+") });
          const slug = await mcp.text.slugify({ text: "Hello Server" });
          return { total, slug };`,
      });
      assert.ok(!result.isError, result.content[0].text);
      assert.deepEqual(result.structuredContent.result, { total: 12, slug: "hello-server" });
      const calls = result.structuredContent.calls as { tool: string; routing: string }[];
      assert.deepEqual(calls.map((c) => [c.tool, c.routing]), [
        ["json:parse", "server"],
        ["math:evaluate", "server"],
        ["text:slugify", "server"],
      ]);
      assert.equal(body(result).status, "success");
    });
  }
});

Deno.test("server execute: client tools with X-PML-Client: package answer execute_locally with the DAG", async () => {
  await withExecute({ package: true }, async (execute) => {
    const result = await execute({ code: MIXED });
    assert.ok(!result.isError, result.content[0].text);
    const answer = body(result);
    assert.deepEqual(result.structuredContent, answer);
    assert.equal(answer.status, "execute_locally");
    assert.equal(answer.code, MIXED);
    assert.deepEqual(answer.tools_used, [
      "filesystem:read_file",
      "json:parse",
      "filesystem:write_file",
    ]);
    assert.deepEqual(answer.client_tools, ["filesystem:read_file", "filesystem:write_file"]);
    assert.deepEqual(answer.dag.tasks, [
      { id: "t1", tool: "filesystem:read_file", dependsOn: [] },
      { id: "t2", tool: "json:parse", dependsOn: ["t1"] },
      { id: "t3", tool: "filesystem:write_file", dependsOn: ["t2"] },
    ]);
  });
});

Deno.test("server execute: client tools without the package header get CLIENT_TOOLS_REQUIRE_PACKAGE with install steps", async () => {
  await withExecute({}, async (execute) => {
    for (const code of [MIXED, `return await mcp.shell.exec({ command: "ls" });`]) {
      const result = await execute({ code });
      assert.equal(result.isError, true);
      assert.equal(result.structuredContent.code, "CLIENT_TOOLS_REQUIRE_PACKAGE");
      assert.match(result.structuredContent.message, /@casys\/pml/);
      assert.match(result.structuredContent.message, /pml init/);
      assert.ok((result.structuredContent.client_tools as string[]).length > 0);
    }
    // A name only known at run time may be a client tool: never guessed to be a server one.
    const dynamic = await execute({ code: `const ns = "json"; return await mcp[ns].parse({});` });
    assert.equal(dynamic.structuredContent.code, "CLIENT_TOOLS_REQUIRE_PACKAGE");
    assert.match(dynamic.structuredContent.message, /only known when it runs/);
  });
});

Deno.test("server execute: the package header is read case-insensitively, other values are not the package", async () => {
  const server = await mcpTestServer();
  try {
    for (const [value, status] of [["Package", "execute_locally"], ["browser", "error"]]) {
      const client = await connectClient({ app: server.app }, {
        authorization: `Bearer ${server.key}`,
        "X-PML-Client": value,
      });
      const result = await callTool(client, "pml:execute", { code: MIXED });
      assert.equal(body(result).status, status, value);
      await client.close();
    }
  } finally {
    await server.close();
  }
});

Deno.test("server execute: empty code, bad timeout and syntax errors are clear errors, nothing runs", async () => {
  await withExecute({ package: true }, async (execute) => {
    for (const args of [{ code: "" }, { code: "  \n\t" }, {}]) {
      const result = await execute(args);
      assert.equal(result.isError, true);
      assert.equal(result.structuredContent.code, "EMPTY_CODE");
    }
    const bad = await execute({ code: "return 1", timeout_ms: -5 });
    assert.equal(bad.structuredContent.code, "INVALID_ARGUMENTS");
    assert.match(bad.structuredContent.message, /timeout_ms must be a positive number, got -5/);
    const syntax = await execute({ code: "const x = ;\nreturn x" });
    assert.equal(syntax.isError, true);
    assert.equal(syntax.structuredContent.code, "SYNTAX_ERROR");
    assert.equal(syntax.structuredContent.line, 1);
    assert.equal(typeof syntax.structuredContent.column, "number");
  });
});

Deno.test("server execute: an infinite loop ends with EXECUTION_TIMEOUT and its process is gone", async () => {
  await withExecute({}, async (execute) => {
    // The pool starts on first use, so the sandboxes seen early in the run are the looping one.
    const running = execute({ code: "while (true) {}", timeout_ms: 600 });
    const seen = new Set<number>();
    for (const end = Date.now() + 300; Date.now() < end;) {
      for (const pid of execSandboxPids()) seen.add(pid);
      await new Promise((r) => setTimeout(r, 20));
    }
    const result = await running;
    assert.equal(result.structuredContent.code, "EXECUTION_TIMEOUT");
    assert.match(result.structuredContent.message, /600 ms/);
    assert.ok(seen.size >= 1, "the sandbox was seen running");
    assert.deepEqual([...seen].filter(processAlive), [], "the looping sandbox is gone");
  });
});

Deno.test("server execute: sandboxed code has no file, network, env or subprocess access on the server", async () => {
  await withExecute({}, async (execute) => {
    const attempts = {
      read: `return await Deno.readTextFile("/etc/hostname");`,
      write: `await Deno.writeTextFile("/tmp/pml-server-escape", "x"); return 1;`,
      fetch: `return await (await fetch("http://127.0.0.1:9/")).text();`,
      env: `return Deno.env.get("HOME") ?? Deno.env.toObject();`,
      run: `return await new Deno.Command("id").output();`,
      import: `return await import("file:///etc/hostname");`,
      bridge:
        `Deno.stdout.writeSync(new TextEncoder().encode('{"t":"result","id":1,"ok":true,"value":"forged"}\\n')); return "x";`,
    };
    for (const [what, code] of Object.entries(attempts)) {
      const result = await execute({ code });
      assert.equal(result.isError, true, `${what}: ${result.content[0].text}`);
      assert.ok(
        ["PERMISSION_DENIED", "CODE_ERROR"].includes(result.structuredContent.code!),
        `${what}: ${result.content[0].text}`,
      );
      assert.ok(!result.content[0].text.includes("forged"), what);
    }
    let escaped = true;
    try {
      Deno.statSync("/tmp/pml-server-escape");
    } catch {
      escaped = false;
    }
    assert.equal(escaped, false, "nothing was written");
  });
});

Deno.test("server execute: unknown tools and meta tools from code are refused", async () => {
  await withExecute({}, async (execute) => {
    const unknown = await execute({ code: `return await mcp.json.no_such_action({});` });
    assert.equal(unknown.structuredContent.code, "UNKNOWN_TOOL");
    assert.match(unknown.structuredContent.message, /"json:no_such_action".*pml:search/);
    const nested = await execute({ code: `return await mcp.pml.execute({ code: "return 1" });` });
    assert.equal(nested.structuredContent.code, "PERMISSION_DENIED");
    // The code may catch a failed call and go on.
    const caught = await execute({
      code:
        `try { await mcp.json.parse({ text: "{" }); } catch (e) { return "caught: " + e.message; }`,
    });
    assert.ok(!caught.isError, caught.content[0].text);
    assert.match(String(caught.structuredContent.result), /^caught: .*json:parse/);
  });
});

/** Registers an http entry `ns` whose one tool `ns:wait` is proxied to `proxyTo`. */
async function registerHttp(store: Store, ns: string, proxyTo: string) {
  const dir = Deno.makeTempDirSync({ prefix: "pml-exec-http-" });
  const path = join(dir, `${ns}.json`);
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      type: "http",
      description: `${ns} test upstream`,
      proxyTo,
      envRequired: [],
      tools: [{ name: `${ns}:wait`, description: "waits", inputSchema: { type: "object" } }],
    }),
  );
  assert.equal(await store.putEntry(await mcpMetadataEntry(path, new Date().toISOString())), true);
  await Deno.remove(dir, { recursive: true });
}

Deno.test("server execute: a tool call that hangs fails with RPC_TIMEOUT; an unreachable upstream fails with its reason", async () => {
  const hang = Promise.withResolvers<void>();
  const hanging = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async () => {
      await hang.promise;
      return new Response("late", { status: 503 });
    },
  );
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const deadPort = (closed.addr as Deno.NetAddr).port;
  closed.close();
  try {
    await withExecute({
      handler: { execute: { rpcTimeoutMs: 300 }, log: () => {} },
      setup: async (store) => {
        await registerHttp(store, "hangs", `http://127.0.0.1:${hanging.addr.port}/mcp`);
        await registerHttp(store, "down", `http://127.0.0.1:${deadPort}/mcp`);
      },
    }, async (execute) => {
      const slow = await execute({ code: `return await mcp.hangs.wait({});` });
      assert.equal(slow.structuredContent.code, "RPC_TIMEOUT");
      assert.match(
        slow.structuredContent.message,
        /mcp\.hangs\.wait\(\) did not answer within 300 ms/,
      );
      const down = await execute({ code: `return await mcp.down.wait({});` });
      assert.equal(down.isError, true);
      assert.match(down.structuredContent.message, /Cannot call "down:wait" on its MCP server/);
    });
  } finally {
    hang.resolve();
    await hanging.shutdown();
  }
});

Deno.test("server execute: concurrent executions beyond the limit wait their turn and all finish", async () => {
  await withExecute({ handler: { execute: { maxConcurrent: 2 } } }, async (execute) => {
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((n) =>
        execute({ code: `return await mcp.math.evaluate({ expression: "${n} * 10" });` })
      ),
    );
    assert.deepEqual(results.map((r) => r.structuredContent.result), [10, 20, 30, 40, 50]);
  });
});
