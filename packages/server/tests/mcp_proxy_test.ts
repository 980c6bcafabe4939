/**
 * http tools proxied to their remote MCP server, with the caller's BYOK key: the real
 * server-everything (Streamable HTTP, loopback) behind a recording proxy, the PML server on a
 * real loopback socket. The key reaches the upstream, and appears nowhere in what the server
 * logs or stores (SQLite file bytes and every table).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { mcpMetadataEntry } from "../src/registry/mcp_metadata.ts";
import { SqliteStore } from "../src/store/sqlite_store.ts";
import type { Store } from "../src/store/store.ts";
import { byokHeader, callTool, connectClient, mcpTestServer } from "./mcp_helpers.ts";
import { startEverything, startRecordingProxy } from "./upstream.ts";

/** Registers the `everything-http` fixture as `<server>` pointing at `proxyTo`, needing `EVERYTHING_TOKEN`. */
async function registerUpstream(store: Store, dir: string, server: string, proxyTo: string) {
  const everything = JSON.parse(
    await Deno.readTextFile(
      join(import.meta.dirname!, "fixtures/everything-http.json"),
    ),
  );
  const meta = {
    type: "http",
    description: "server-everything behind a recording proxy",
    proxyTo,
    envRequired: ["EVERYTHING_TOKEN"],
    byok: { env: "EVERYTHING_TOKEN", header: "Authorization", format: "Bearer {key}" },
    tools: everything.tools
      .filter((t: { name: string }) =>
        ["everything-http:echo", "everything-http:get-sum"].includes(t.name)
      )
      .map((t: { name: string }) => ({
        ...t,
        name: t.name.replace("everything-http:", `${server}:`),
      })),
  };
  const path = join(dir, `${server}.json`);
  await Deno.writeTextFile(path, JSON.stringify(meta));
  assert.equal(await store.putEntry(await mcpMetadataEntry(path, new Date().toISOString())), true);
}

/** Every byte the SQLite store left on disk, and every row of every table as text. */
function storeDump(file: string): string {
  const bytes = [file, `${file}-wal`, `${file}-shm`].map((path) => {
    try {
      return new TextDecoder("latin1").decode(Deno.readFileSync(path));
    } catch {
      return "";
    }
  });
  const db = new DatabaseSync(file);
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all();
    const rows = tables.map(({ name }) =>
      JSON.stringify(
        db.prepare(`SELECT * FROM "${String(name)}"`).all(),
        (_, v) => v instanceof Uint8Array ? new TextDecoder("latin1").decode(v) : v,
      )
    );
    return bytes.join("\n") + rows.join("\n");
  } finally {
    db.close();
  }
}

Deno.test("a proxied call carries the BYOK key to the upstream and nowhere else", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pml-byok-" });
  const file = join(dir, "pml.sqlite");
  const key = `tvly-SECRET-${crypto.randomUUID()}`;
  const logs: string[] = [];
  const store = new SqliteStore(file);
  const upstream = await startEverything();
  const recorder = startRecordingProxy(upstream.url);
  const server = await mcpTestServer({
    store,
    handler: { log: (line) => logs.push(line) },
  });
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, server.app);
  try {
    await registerUpstream(store, dir, "upstream", recorder.url);
    await registerUpstream(store, dir, "downstream", "http://127.0.0.1:9/mcp"); // nothing listens
    const client = await connectClient({ url: `http://127.0.0.1:${http.addr.port}/mcp` }, {
      authorization: `Bearer ${server.key}`,
      "x-pml-byok": byokHeader({ EVERYTHING_TOKEN: key }),
    });
    try {
      const listed = await client.listTools();
      assert.ok(listed.tools.some((t) => t.name === "upstream__echo"));
      const echoed = await callTool(client, "upstream__echo", { message: "hello through PML" });
      assert.equal(echoed.isError, undefined);
      assert.match(echoed.content[0].text, /hello through PML/);
      const sum = await callTool(client, "upstream:get-sum", { a: 2, b: 40 });
      assert.match(sum.content[0].text, /42/);
      const failed = await callTool(client, "downstream__echo", { message: key });
      assert.equal(failed.isError, true);
      assert.equal(failed.structuredContent.code, "UPSTREAM_ERROR");
    } finally {
      await client.close();
    }
    // It did reach the upstream, in the header the metadata names.
    assert.ok(recorder.seen.length >= 2);
    assert.ok(recorder.seen.every((h) => h.get("authorization") === `Bearer ${key}`));
    // And nowhere else: logs (there is at least the downstream failure) and storage.
    assert.ok(logs.length >= 1, "the failing upstream was logged");
    assert.ok(logs.every((line) => !line.includes(key)), logs.join("\n"));
    await server.close(); // ends the upstream sessions, then closes the store
    assert.ok(!storeDump(file).includes(key), "the key is in the SQLite store");
    assert.ok(storeDump(file).includes("upstream:echo"), "the dump reads the store");
  } finally {
    await server.close().catch(() => {});
    await http.shutdown();
    await recorder.close();
    await upstream.close();
    await store.close().catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("keys serve one request only; a call without the key names the variable", async () => {
  const dir = await Deno.makeTempDir({ prefix: "pml-byok-" });
  const upstream = await startEverything();
  const recorder = startRecordingProxy(upstream.url);
  const server = await mcpTestServer({ handler: { log: () => {} } });
  try {
    await registerUpstream(server.store, dir, "upstream", recorder.url);
    const withKey = await connectClient({ app: server.app }, {
      authorization: `Bearer ${server.key}`,
      "x-pml-byok": byokHeader({ EVERYTHING_TOKEN: "k-1" }),
    });
    const withoutKey = await connectClient({ app: server.app }, {
      authorization: `Bearer ${server.key}`,
    });
    try {
      assert.equal(
        (await callTool(withKey, "upstream__echo", { message: "a" })).isError,
        undefined,
      );
      const missing = await callTool(withoutKey, "upstream__echo", { message: "b" });
      assert.equal(missing.isError, true);
      assert.equal(missing.structuredContent.code, "API_KEY_REQUIRED");
      assert.match(missing.structuredContent.message, /EVERYTHING_TOKEN/);
      assert.match(missing.structuredContent.message, /environment of the pml client/);
      assert.ok(recorder.seen.every((h) => h.get("authorization") === "Bearer k-1"));
    } finally {
      await withKey.close();
      await withoutKey.close();
    }
  } finally {
    await server.close(); // first: its upstream sessions hold streams open through the recorder
    await recorder.close();
    await upstream.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a malformed X-PML-BYOK header is a 400 that does not echo it", async () => {
  const server = await mcpTestServer();
  try {
    const response = await server.request("/mcp", {
      method: "POST",
      headers: {
        authorization: `Bearer ${server.key}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "x-pml-byok": "not-base64-SECRETVALUE!!",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    assert.equal(response.status, 400);
    const body = await response.text();
    assert.match(body, /invalid_byok/);
    assert.ok(!body.includes("SECRETVALUE"));
  } finally {
    await server.close();
  }
});

Deno.test("the MCP endpoint needs an API key and answers 405 to GET streams and DELETE", async () => {
  const server = await mcpTestServer();
  try {
    const init = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    const anonymous = await server.request("/mcp", {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify(init),
    });
    // 403 with a JSON-RPC error, no OAuth challenge: SDK clients go into OAuth on any 401.
    assert.equal(anonymous.status, 403);
    assert.equal(anonymous.headers.get("www-authenticate"), null);
    const refused = await anonymous.json();
    assert.equal(refused.jsonrpc, "2.0");
    assert.equal(refused.error.code, -32001);
    assert.match(
      refused.error.message,
      /^Missing API key: send the header "Authorization: Bearer <key>"/,
    );
    for (const [method, accept] of [["GET", "text/event-stream"], ["DELETE", "*/*"]]) {
      const response = await server.request("/mcp", {
        method,
        headers: { authorization: `Bearer ${server.key}`, accept },
      });
      assert.equal(response.status, 405, method);
      assert.equal(response.headers.get("allow"), "POST");
      await response.body?.cancel();
    }
    const catalog = await server.request("/mcp", { headers: { accept: "application/json" } });
    assert.equal(catalog.status, 200);
    assert.ok(Array.isArray((await catalog.json()).items));
  } finally {
    await server.close();
  }
});
