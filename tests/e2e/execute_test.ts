/**
 * End to end: `pml:execute` through a spawned `bin/pml stdio` in cloud mode, against a real
 * `pml-server` on loopback. The package sends the code to the server first (`X-PML-Client:
 * package`); the server runs server-only code itself and answers `execute_locally` for code that
 * touches this machine, which the package then runs in its sandbox, routing each `mcp.*` call.
 * Code calling a tool of a namespace the routing table names `client` is not sent: the server's
 * answer is known (docs/speed.md).
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { decodeByok, type Seen, startCloud, startUpstream } from "./_cloud.ts";
import { connectStdio } from "./_spawn.ts";

interface ExecBody {
  status: string;
  code?: string;
  message?: string;
  result?: unknown;
  calls?: { tool: string; routing: string }[];
}

const parse = (r: unknown): ExecBody & { isError: boolean } => ({
  ...JSON.parse((r as { content: { text: string }[] }).content[0].text),
  isError: (r as { isError?: boolean }).isError === true,
});

const NO_UPSTREAM = "http://127.0.0.1:9"; // the http entries exist but are never called here

function cloudEnv(cloud: { url: string; key: string }, extra: Record<string, string> = {}) {
  return {
    PML_CLOUD_URL: cloud.url,
    PML_API_KEY: cloud.key,
    PML_CLOUD_TIMEOUT_MS: "3000",
    ...extra,
  };
}

const toolCalls = (seen: Seen[], from = 0) =>
  seen.slice(from).filter((s) => s.rpc === "tools/call").map((s) => s.tool?.replace("__", ":"));

const MIXED = `
  const text = await mcp.filesystem.read_file({ path: "orders.json" });
  const orders = await mcp.json.parse({ text });
  const total = orders.reduce((sum, o) => sum + o.qty * o.price, 0);
  await mcp.filesystem.write_file({ path: "total.json", content: JSON.stringify({ total }) });
  return { count: orders.length, total };`;

const ORDERS = JSON.stringify([{ qty: 2, price: 10 }, { qty: 1, price: 5.5 }, {
  qty: 3,
  price: 1,
}]);

Deno.test("e2e execute: mixed code reads a local file, parses it on the server, writes the result locally", async () => {
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem", "json"], ask: [], deny: [] },
  });
  ws.write("orders.json", ORDERS);
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });

  const from = cloud.seen.length;
  const body = parse(
    await client.callTool({ name: "pml__execute", arguments: { code: MIXED } }),
  );
  assert(!body.isError, JSON.stringify(body));
  assertEquals(body.result, { count: 3, total: 28.5 });
  assertEquals(JSON.parse(ws.read("total.json")), { total: 28.5 });
  assertEquals(body.calls!.map((c) => [c.tool, c.routing]), [
    ["filesystem:read_file", "client"],
    ["json:parse", "server"],
    ["filesystem:write_file", "client"],
  ]);

  // `filesystem` is a `client` namespace of the routing table: the server would answer
  // execute_locally, so it is not asked. It got only the json call: the file's content reached it
  // as the argument of the call the user allowed, nothing else.
  assertEquals(toolCalls(cloud.seen, from), ["json:parse"]);
  const [jsonCall] = cloud.calls().slice(-1);
  assertEquals(jsonCall.headers["x-pml-client"], "package");
  assertEquals(jsonCall.headers["authorization"], `Bearer ${cloud.key}`);
});

Deno.test("e2e execute: code whose namespace the routing table does not name is planned by the server, which hands it back", async () => {
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({
    permissions: { allow: ["mine", "json"], ask: [], deny: [] },
    private_mcps: {
      mine: { type: "deno", code: `export async function hello() { return "[1,2]"; }` },
    },
  });
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });

  const from = cloud.seen.length;
  const body = parse(
    await client.callTool({
      name: "pml__execute",
      arguments: { code: `return await mcp.json.parse({ text: await mcp.mine.hello({}) });` },
    }),
  );
  assert(!body.isError, JSON.stringify(body));
  assertEquals(body.result, [1, 2]);
  // Only the server can tell that `mine` is not one of its tools: it was asked, answered
  // execute_locally, and then got the json call alone.
  assertEquals(toolCalls(cloud.seen, from), ["pml:execute", "json:parse"]);
  const [plan] = cloud.calls().slice(-2);
  assertEquals(plan.headers["x-pml-client"], "package");
});

Deno.test("e2e execute: server-only code runs on the server in one request", async () => {
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({ permissions: { allow: ["json", "math"], ask: [], deny: [] } });
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });

  const from = cloud.seen.length;
  const body = parse(
    await client.callTool({
      name: "pml__execute",
      arguments: {
        code: `const v = await mcp.json.parse({ text: "[1,2,3,4]" });
               return await mcp.math.evaluate({ expression: v.join(" * ") });`,
      },
    }),
  );
  assert(!body.isError, JSON.stringify(body));
  assertEquals(body.result, 24);
  assertEquals(body.calls!.map((c) => [c.tool, c.routing]), [
    ["json:parse", "server"],
    ["math:evaluate", "server"],
  ]);
  assertEquals(toolCalls(cloud.seen, from), ["pml:execute"], "one request: the server ran it");
  assertEquals(cloud.calls().at(-1)!.headers["x-pml-client"], "package");
});

Deno.test("e2e execute: a tool the user did not allow keeps the code on this machine, each call checked", async () => {
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({
    permissions: { allow: ["math"], ask: ["json"], deny: ["text"] },
  });
  const asked: string[] = [];
  await using client = await connectStdio(ws, {
    env: cloudEnv(cloud),
    elicit: (message) => (asked.push(message), "yes"),
  });

  let from = cloud.seen.length;
  const askedRun = parse(
    await client.callTool({
      name: "pml__execute",
      arguments: {
        code: `const v = await mcp.json.parse({ text: "[6,7]" });
               return await mcp.math.evaluate({ expression: v.join(" * ") });`,
      },
    }),
  );
  assert(!askedRun.isError, JSON.stringify(askedRun));
  assertEquals(askedRun.result, 42);
  assertEquals(asked.length, 1, "the human was asked about json:parse");
  assertStringIncludes(asked[0], "json:parse");
  assertEquals(toolCalls(cloud.seen, from), ["json:parse", "math:evaluate"], "no pml:execute");

  from = cloud.seen.length;
  const denied = parse(
    await client.callTool({
      name: "pml__execute",
      arguments: { code: `return await mcp.text.slugify({ text: "No Way" });` },
    }),
  );
  assertEquals([denied.isError, denied.code], [true, "PERMISSION_DENIED"]);
  assertEquals(toolCalls(cloud.seen, from), [], "a denied tool never reaches the server");
});

Deno.test("e2e execute: with the cloud down, local tools still run and server tools fail with CLOUD_UNREACHABLE", async () => {
  await using cloud = await startCloud(NO_UPSTREAM);
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem", "json"], ask: [], deny: [] },
  });
  ws.write("orders.json", ORDERS);
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });
  await cloud.stop();

  const local = parse(
    await client.callTool({
      name: "pml__execute",
      arguments: {
        code: `return (await mcp.filesystem.read_file({ path: "orders.json" })).length;`,
      },
    }),
  );
  assert(!local.isError, JSON.stringify(local));
  assertEquals(local.result, ORDERS.length);

  const mixed = parse(
    await client.callTool({ name: "pml__execute", arguments: { code: MIXED } }),
  );
  assertEquals([mixed.isError, mixed.code], [true, "CLOUD_UNREACHABLE"]);
  assertStringIncludes(mixed.message!, "unreachable");
  let written = true;
  try {
    ws.read("total.json");
  } catch {
    written = false;
  }
  assertEquals(written, false, "the code stopped at the failed call");
});

Deno.test("e2e execute: server-run code gets the BYOK keys of its tools only, and they reach the upstream", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace({
    permissions: { allow: ["json", "upstream"], ask: [], deny: [] },
    env: ["UPSTREAM_TOKEN", "OTHER_SECRET"],
  });
  await using client = await connectStdio(ws, {
    env: cloudEnv(cloud, { UPSTREAM_TOKEN: "tok-upstream-123", OTHER_SECRET: "other-456" }),
  });

  const body = parse(
    await client.callTool({
      name: "pml__execute",
      arguments: {
        code: `const m = await mcp.json.parse({ text: '{"msg":"hi from code"}' });
               return await mcp.upstream.echo({ message: m.msg });`,
      },
    }),
  );
  assert(!body.isError, JSON.stringify(body));
  assertStringIncludes(JSON.stringify(body.result), "hi from code");
  const plan = cloud.calls().at(-1)!;
  assertEquals(plan.tool?.replace("__", ":"), "pml:execute");
  assertEquals(decodeByok(plan.headers["x-pml-byok"]), { UPSTREAM_TOKEN: "tok-upstream-123" });
  const atUpstream = upstream.seen.filter((s) => s.rpc === "tools/call");
  assertEquals(atUpstream.at(-1)!.headers["authorization"], "Bearer tok-upstream-123");
});

Deno.test("e2e execute: code calling an npm MCP server installs it on approval, then resumes without repeating calls", async () => {
  await using ws = tempWorkspace({
    approvals: "agent",
    permissions: { allow: ["memory", "filesystem"], ask: [], deny: [] },
  });
  ws.write("fact.txt", "PML routes each call");
  // The real HOME lets npm use its cache (a fresh machine fetches once); PML_HOME is private.
  await using client = await connectStdio(ws, {
    env: { HOME: Deno.env.get("HOME") ?? ws.home, PML_HOME: join(ws.home, ".pml") },
  });
  const code = `
    const fact = await mcp.filesystem.read_file({ path: "fact.txt" });
    await mcp.memory.create_entities({
      entities: [{ name: "pml", entityType: "product", observations: [fact] }],
    });
    const graph = await mcp.memory.read_graph({});
    return graph.entities.map((e) => e.name + ": " + e.observations.join());`;
  const paused = await client.callTool({ name: "pml__execute", arguments: { code } });
  const approval = paused.structuredContent as Record<string, unknown>;
  assertEquals(approval.approval_type, "dependency", JSON.stringify(approval));
  assertStringIncludes(String(approval.description), "mcp call #2");

  const done = parse(
    await client.callTool({
      name: "pml__continue",
      arguments: { workflow_id: approval.workflow_id, decision: "yes" },
    }),
  );
  assert(!done.isError, JSON.stringify(done));
  assertEquals(done.result, ["pml: PML routes each call"]);
  assertEquals(
    done.calls!.map((c) => [c.tool, c.routing, (c as { replayed?: boolean }).replayed === true]),
    [
      ["filesystem:read_file", "client", true],
      ["memory:create_entities", "client", false],
      ["memory:read_graph", "client", false],
    ],
  );
});
