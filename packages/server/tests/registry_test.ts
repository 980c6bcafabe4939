/** GET /mcp/{fqdn}: every status code and header of DESIGN §7, through createApp() (no port). */
import assert from "node:assert/strict";
import { join } from "node:path";
import { FIXTURE_REGISTRY, sha256, testServer } from "./helpers.ts";

const demoBytes = await Deno.readFile(join(FIXTURE_REGISTRY, "std/demo.ts"));
const demoHash = await sha256(demoBytes);
const demoFqdn = `pml.std.demo.echo.${demoHash.slice(0, 4)}`;

Deno.test("a deno entry serves the module bytes as application/typescript with cache headers", async () => {
  const server = await testServer();
  try {
    const response = await server.request(`/mcp/${demoFqdn}`);
    assert.equal(response.status, 200);
    assert.deepEqual(new Uint8Array(await response.arrayBuffer()), demoBytes);
    assert.equal(response.headers.get("content-type"), "application/typescript");
    assert.equal(response.headers.get("x-pml-type"), "deno");
    assert.equal(response.headers.get("x-pml-routing"), "client"); // "demo" is not in routing.json
    assert.equal(response.headers.get("etag"), `"${demoHash}"`);
    assert.equal(response.headers.get("cache-control"), "public, max-age=3600");
    // Both actions of the module serve the same bytes under the same hash.
    const add = await server.request(`/mcp/pml.std.demo.add.${demoHash.slice(0, 4)}`);
    assert.equal(add.status, 200);
    assert.deepEqual(new Uint8Array(await add.arrayBuffer()), demoBytes);
  } finally {
    await server.close();
  }
});

Deno.test("stdio and http entries serve JSON metadata whose SHA-256 is the FQDN hash and ETag", async () => {
  const server = await testServer();
  try {
    for (
      const [name, type, routing] of [
        ["pml.mcp.memory.server", "stdio", "client"],
        ["pml.mcp.tavily.server", "http", "server"],
      ]
    ) {
      const redirect = await server.request(`/mcp/${name}`);
      const fqdn = (await redirect.json()).fqdn;
      const response = await server.request(`/mcp/${fqdn}`);
      assert.equal(response.status, 200);
      const bytes = new Uint8Array(await response.arrayBuffer());
      const hash = await sha256(bytes);
      assert.equal(fqdn, `${name}.${hash.slice(0, 4)}`);
      assert.equal(response.headers.get("etag"), `"${hash}"`);
      assert.equal(response.headers.get("content-type"), "application/json");
      assert.equal(response.headers.get("x-pml-type"), type);
      assert.equal(response.headers.get("x-pml-routing"), routing);
      assert.equal(response.headers.get("cache-control"), "public, max-age=3600");
      const meta = JSON.parse(new TextDecoder().decode(bytes));
      assert.equal(meta.fqdn, name);
      assert.equal(meta.type, type);
      assert.equal(meta.routing, routing);
      if (type === "stdio") {
        assert.match(meta.package.integrity, /^sha512-/);
        assert.deepEqual(Object.keys(meta.permissions), ["read", "write", "net", "env"]);
        assert.equal(meta.install.command, "npx");
        assert.ok(meta.tools.some((t: { name: string }) => t.name === "memory:create_entities"));
      } else {
        assert.deepEqual(meta.envRequired, ["TAVILY_API_KEY"]);
        assert.match(meta.integrity, /^sha256-/);
        assert.ok(meta.proxyTo.startsWith("https://"));
      }
    }
  } finally {
    await server.close();
  }
});

Deno.test("If-None-Match with the ETag answers 304 without a body; other tags answer 200", async () => {
  const server = await testServer();
  try {
    for (const tag of [`"${demoHash}"`, `W/"${demoHash}"`, `"nope", "${demoHash}"`, "*"]) {
      const response = await server.request(`/mcp/${demoFqdn}`, {
        headers: { "if-none-match": tag },
      });
      assert.equal(response.status, 304, tag);
      assert.equal(await response.text(), "");
      assert.equal(response.headers.get("etag"), `"${demoHash}"`);
      assert.equal(response.headers.get("cache-control"), "public, max-age=3600");
      assert.equal(response.headers.get("x-pml-type"), "deno");
    }
    const other = await server.request(`/mcp/${demoFqdn}`, {
      headers: { "if-none-match": '"abc"' },
    });
    assert.equal(other.status, 200);
    await other.body?.cancel();
  } finally {
    await server.close();
  }
});

Deno.test("a 4-part FQDN redirects (302) to the current 5-part FQDN", async () => {
  const server = await testServer();
  try {
    const response = await server.request("/mcp/pml.std.demo.echo");
    assert.equal(response.status, 302);
    assert.equal(response.headers.get("location"), `/mcp/${demoFqdn}`);
    assert.equal(response.headers.get("cache-control"), "no-cache");
    assert.deepEqual(await response.json(), { fqdn: demoFqdn });
  } finally {
    await server.close();
  }
});

Deno.test("a wrong hash answers 404 hash_mismatch with the current FQDN", async () => {
  const server = await testServer();
  try {
    const response = await server.request("/mcp/pml.std.demo.echo.xxxx");
    assert.equal(response.status, 404);
    assert.equal(response.headers.get("content-type"), "application/json");
    assert.deepEqual(await response.json(), {
      error: "hash_mismatch",
      message: `Hash 'xxxx' does not match current hash '${
        demoHash.slice(0, 4)
      }' for pml.std.demo.echo`,
      currentFqdn: demoFqdn,
    });
  } finally {
    await server.close();
  }
});

Deno.test("an unknown name answers 404 not_found, with or without a hash", async () => {
  const server = await testServer();
  try {
    for (const fqdn of ["unknown.thing.here.now.abcd", "unknown.thing.here.now"]) {
      const response = await server.request(`/mcp/${fqdn}`);
      assert.equal(response.status, 404);
      assert.deepEqual(await response.json(), {
        error: "not_found",
        message: "MCP 'unknown.thing.here.now' not in registry",
      });
    }
  } finally {
    await server.close();
  }
});

Deno.test("HEAD answers the GET headers without a body; other methods get 405", async () => {
  const server = await testServer();
  try {
    const head = await server.request(`/mcp/${demoFqdn}`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("etag"), `"${demoHash}"`);
    assert.equal(head.headers.get("content-length"), String(demoBytes.byteLength));
    assert.equal(await head.text(), "");
    const put = await server.request(`/mcp/${demoFqdn}`, { method: "PUT", body: "x" });
    assert.equal(put.status, 405);
    assert.equal(put.headers.get("allow"), "GET, HEAD");
    assert.equal((await put.json()).error, "method_not_allowed");
  } finally {
    await server.close();
  }
});
