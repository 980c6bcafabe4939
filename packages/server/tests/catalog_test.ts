/** GET /mcp (catalog), GET /api/routing, GET /health and unknown routes, through createApp(). */
import assert from "node:assert/strict";
import { sha256, testServer } from "./helpers.ts";

Deno.test("the catalog lists every entry with fqdn, type, routing and description, paginated", async () => {
  const server = await testServer();
  try {
    const response = await server.request("/mcp");
    assert.equal(response.status, 200);
    const body = await response.json();
    assert.equal(body.total, 4);
    assert.equal(body.page, 1);
    assert.equal(body.limit, 50);
    assert.deepEqual(
      body.items.map((i: { fqdn: string }) => i.fqdn.split(".").slice(0, 4).join(".")),
      [
        "pml.mcp.memory.server",
        "pml.mcp.tavily.server",
        "pml.std.demo.add",
        "pml.std.demo.echo",
      ],
    );
    const echo = body.items[3];
    assert.match(echo.fqdn, /^pml\.std\.demo\.echo\.[0-9a-f]{4}$/);
    assert.deepEqual({ ...echo, fqdn: undefined }, {
      fqdn: undefined,
      type: "deno",
      routing: "client",
      description: "Echo a text",
      tools: ["demo:echo"],
    });
    const page2 = await (await server.request("/mcp?page=2&limit=3")).json();
    assert.deepEqual([page2.total, page2.page, page2.limit, page2.items.length], [4, 2, 3, 1]);
    const beyond = await (await server.request("/mcp?page=9&limit=3")).json();
    assert.deepEqual(beyond.items, []);
    assert.equal(beyond.total, 4);
  } finally {
    await server.close();
  }
});

Deno.test("the catalog filters by type, by provided tool and by text", async () => {
  const server = await testServer();
  try {
    const names = async (query: string) => {
      const body = await (await server.request(`/mcp?${query}`)).json();
      return body.items.map((i: { fqdn: string }) => i.fqdn.split(".").slice(0, 4).join("."));
    };
    assert.deepEqual(await names("type=stdio"), ["pml.mcp.memory.server"]);
    assert.deepEqual(await names("type=http"), ["pml.mcp.tavily.server"]);
    assert.deepEqual(await names("type=deno"), ["pml.std.demo.add", "pml.std.demo.echo"]);
    assert.deepEqual(await names("tool=memory:read_graph"), ["pml.mcp.memory.server"]);
    assert.deepEqual(await names("tool=demo:add"), ["pml.std.demo.add"]);
    assert.deepEqual(await names("tool=demo:nothing"), []);
    assert.deepEqual(await names("q=ECHO"), ["pml.std.demo.echo"]);
    assert.deepEqual(await names("q=knowledge+graph"), ["pml.mcp.memory.server"]);
    assert.deepEqual(await names("q=tavily-search"), ["pml.mcp.tavily.server"]);
    assert.deepEqual(await names("type=deno&q=numbers"), ["pml.std.demo.add"]);
    assert.deepEqual(await names("q=100%25"), []);
  } finally {
    await server.close();
  }
});

Deno.test("GET /api/routing serves routing.json with an ETag and answers 304", async () => {
  const server = await testServer();
  try {
    const response = await server.request("/api/routing");
    assert.equal(response.status, 200);
    const bytes = new Uint8Array(await response.arrayBuffer());
    assert.deepEqual(bytes, server.routing.bytes);
    const etag = `"${await sha256(bytes)}"`;
    assert.equal(response.headers.get("etag"), etag);
    assert.equal(response.headers.get("content-type"), "application/json");
    const table = JSON.parse(new TextDecoder().decode(bytes));
    assert.equal(table.version, 1);
    assert.ok(table.client.includes("filesystem"));
    assert.ok(table.server.includes("tavily"));
    assert.equal(table.default, "client");
    const cached = await server.request("/api/routing", { headers: { "if-none-match": etag } });
    assert.equal(cached.status, 304);
    assert.equal(cached.headers.get("etag"), etag);
    assert.equal(await cached.text(), "");
  } finally {
    await server.close();
  }
});

Deno.test("GET /health reports the store, and 503 when the store fails", async () => {
  const server = await testServer();
  try {
    const response = await server.request("/health");
    assert.equal(response.status, 200);
    assert.deepEqual(await response.json(), { status: "ok", store: "sqlite", version: "0.1.0" });
    assert.equal(response.headers.get("cache-control"), "no-store");
    await server.store.close();
    const down = await server.request("/health");
    assert.equal(down.status, 503);
    const body = await down.json();
    assert.equal(body.status, "error");
    assert.match(body.message, /Store "sqlite" does not answer/);
  } finally {
    await server.close();
  }
});

Deno.test("unknown routes answer 404 JSON, wrong methods 405, unexpected failures 500 without details", async () => {
  const logged: unknown[] = [];
  const server = await testServer({ deps: { logError: (_m, e) => logged.push(e) } });
  try {
    const missing = await server.request("/nothing/here");
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), {
      error: "not_found",
      message: "No route for GET /nothing/here",
    });
    const del = await server.request("/api/routing", { method: "DELETE" });
    assert.equal(del.status, 405);
    assert.equal((await del.json()).error, "method_not_allowed");
    const put = await server.request("/mcp", { method: "PUT" });
    assert.equal(put.status, 405);
    assert.equal(put.headers.get("allow"), "GET, HEAD, POST");
    await put.body?.cancel();
    await server.store.close();
    const broken = await server.request("/mcp");
    assert.equal(broken.status, 500);
    assert.deepEqual(await broken.json(), {
      error: "internal_error",
      message: "Internal server error",
    });
    assert.equal(logged.length, 1);
  } finally {
    await server.close();
  }
});
