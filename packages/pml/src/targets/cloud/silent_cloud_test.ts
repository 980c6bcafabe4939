/**
 * A cloud that accepts requests and never answers (issue: a hanging cloud made `tools/list` take
 * 12 s and a call 22 s). Through the whole gateway and an SDK client in memory, with short
 * injected bounds: no timed assertions, the tests check what was answered and what was sent.
 */
import { join } from "node:path";
import type { Tool } from "../../sdk/types.ts";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../../testing/assert.ts";
import { gatewayFor, type TempWorkspace, tempWorkspace, textOf } from "../../testing/workspace.ts";
import { CLOUD_TOOLS_CACHE_FILE } from "./tools_cache.ts";

const CLOUD_URL = "https://cloud.test";

/** A fetch that records each request and answers none: it only ends when the caller aborts. */
function silentCloud() {
  const seen: { url: string; rpc?: string }[] = [];
  const fetch = (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    let rpc: string | undefined;
    try {
      rpc = typeof init.body === "string" ? JSON.parse(init.body).method : undefined;
    } catch { /* not JSON */ }
    seen.push({ url: String(input instanceof Request ? input.url : input), rpc });
    return new Promise((_, reject) => {
      const signal = init.signal ?? (input instanceof Request ? input.signal : undefined);
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  };
  return { fetch: fetch as typeof globalThis.fetch, seen };
}

/** A gateway in cloud mode whose cloud (and registry) is `cloud`, with short bounds. */
function withCloud(ws: TempWorkspace, cloud: ReturnType<typeof silentCloud>) {
  return gatewayFor(ws, {
    env: { PML_API_KEY: "pml_test", PML_CLOUD_URL: CLOUD_URL },
    cloud: { fetch: cloud.fetch, timeoutMs: 300, listTimeoutMs: 50 },
    registry: { fetch: cloud.fetch, registryTimeoutMs: 300 },
  });
}

const PERMS = {
  permissions: { allow: ["filesystem:read_file", "json", "math"], ask: ["nosuch"], deny: [] },
};

const structured = (r: unknown) =>
  (r as { structuredContent?: Record<string, unknown> }).structuredContent ?? {};

Deno.test("silent cloud: tools/list answers with the local tools; a cloud call fails with CLOUD_UNREACHABLE after one connection attempt, never asked; later lists do not ask again", async () => {
  await using ws = tempWorkspace(PERMS);
  const cloud = silentCloud();
  await using g = await withCloud(ws, cloud);
  const { gateway, client } = g;

  const names = (await client.listTools()).tools.map((t) => t.name);
  assert(names.includes("filesystem__read_file"), names.join());
  assert(!names.includes("json__parse"), "nothing is known of the cloud's tools");

  const initializes = () => cloud.seen.filter((s) => s.rpc === "initialize").length;
  const before = initializes();
  const r = await client.callTool({ name: "json__parse", arguments: { text: "1" } });
  assert(r.isError);
  assertEquals(structured(r).code, "CLOUD_UNREACHABLE");
  assertStringIncludes(textOf(r), "did not answer within");
  // One attempt at most: the call shares the list's if that one is still running.
  assert(initializes() - before <= 1, "one session attempt for the call, tool list included");

  // Server tools that may or may not exist (unmatched → ask): the failure, not a question.
  for (const name of ["pml__nosuch", "tavily__search"]) {
    const r = await client.callTool({ name, arguments: {} });
    assertEquals(structured(r).code, "CLOUD_UNREACHABLE", `${name}: ${textOf(r)}`);
  }
  assertEquals(gateway.pendingApprovals, 0, "nothing was asked");

  // The list load failed: for a while, tools/list uses what it has without asking the cloud again.
  const after = initializes();
  await client.listTools();
  await client.listTools();
  assertEquals(initializes(), after, JSON.stringify(cloud.seen));
});

Deno.test("silent registry: an unknown tool is answered with why it cannot be resolved, never asked", async () => {
  await using ws = tempWorkspace(PERMS);
  const cloud = silentCloud();
  await using g = await withCloud(ws, cloud);
  const { gateway, client } = g;
  for (const name of ["nosuch__tool", "nosuch:tool"]) {
    const r = await client.callTool({ name, arguments: {} });
    assert(r.isError, name);
    assertEquals(structured(r).code, "REGISTRY_TIMEOUT", textOf(r));
    assertStringIncludes(textOf(r), 'Cannot tell whether "nosuch:tool" exists');
    assertStringIncludes(textOf(r), "registry is unreachable");
  }
  assertEquals(gateway.pendingApprovals, 0, "nothing was asked");
});

const PARSE: Tool = {
  name: "json__parse",
  title: "json:parse",
  description: "Parse JSON text into a value",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string", description: "The JSON text" } },
    required: ["text"],
  },
  _meta: { "pml/toolId": "json:parse", "pml/routing": "server", "pml/envRequired": [] },
};

function writeCache(ws: TempWorkspace, cloudUrl: string, tools: Tool[]) {
  const file = join(ws.home, ".pml", CLOUD_TOOLS_CACHE_FILE);
  Deno.mkdirSync(join(file, ".."), { recursive: true });
  Deno.writeTextFileSync(
    file,
    JSON.stringify({ cloudUrl, fetchedAt: "2026-01-01T00:00:00.000Z", tools }),
  );
}

Deno.test("silent cloud with the tool list of an earlier run: tools/list shows those tools with their real schemas; a tool the list does not have is unknown", async () => {
  await using ws = tempWorkspace(PERMS);
  writeCache(ws, CLOUD_URL, [PARSE]);
  const cloud = silentCloud();
  await using g = await withCloud(ws, cloud);
  const { gateway, client } = g;
  const tools = (await client.listTools()).tools;
  const parse = tools.find((t) => t.name === "json__parse");
  assertEquals(parse?.inputSchema, PARSE.inputSchema);
  assertEquals(parse?.description, PARSE.description);
  const err = await assertRejects(() =>
    client.callTool({ name: "json__nosuch", arguments: {} })
  ) as Error;
  assertStringIncludes(err.message, 'Unknown tool "json__nosuch"');
  assertEquals(gateway.pendingApprovals, 0);
});

Deno.test("the tool list of another cloud URL is not used", async () => {
  await using ws = tempWorkspace(PERMS);
  writeCache(ws, "https://other.test", [PARSE]);
  const cloud = silentCloud();
  await using g = await withCloud(ws, cloud);
  const { client } = g;
  const names = (await client.listTools()).tools.map((t) => t.name);
  assert(!names.includes("json__parse"), names.join());
});

Deno.test("silent cloud that is also the registry: later tools/list start no look-up while the first list's are late; a cloud call asks the registry nothing first", async () => {
  await using ws = tempWorkspace(PERMS);
  const cloud = silentCloud();
  // The registry's own timeout (2.5 s) is longer than the list's bound (2 s): the look-ups of the
  // first list are still running when the next lists come.
  await using g = await gatewayFor(ws, {
    env: { PML_API_KEY: "pml_test", PML_CLOUD_URL: CLOUD_URL },
    cloud: { fetch: cloud.fetch, timeoutMs: 300, listTimeoutMs: 50 },
    registry: { fetch: cloud.fetch, registryTimeoutMs: 2500 },
  });
  const { client } = g;
  const registryAsked = () => cloud.seen.filter((s) => !s.url.endsWith("/mcp")).map((s) => s.url);
  const names = (await client.listTools()).tools.map((t) => t.name);
  assert(names.includes("filesystem__read_file"), names.join());
  const asked = registryAsked();
  assert(asked.length > 0, "the first list asked the registry");
  for (let i = 0; i < 3; i++) {
    assert((await client.listTools()).tools.some((t) => t.name === "filesystem__read_file"));
  }
  assertEquals(registryAsked(), asked, "no new look-up while the first ones are late");

  const r = await client.callTool({ name: "json__parse", arguments: { text: "1" } });
  assertEquals(structured(r).code, "CLOUD_UNREACHABLE", textOf(r));
  assertStringIncludes(textOf(r), "did not answer within");
  const lookedUp = registryAsked().filter((u) => u.includes("pml.mcp.json"));
  assertEquals(lookedUp, [], "json is routed to the server: never a registry stdio server");
  // Let the registry's look-ups end (they reject at their own timeout), so no request outlives
  // the test.
  await new Promise((resolve) => setTimeout(resolve, 2600));
});
