/** POST /mcp: authentication (401/403), publishing learned capabilities, the MCP dispatch seam. */
import assert from "node:assert/strict";
import { capabilityCode, sha256, testServer } from "./helpers.ts";

const request = {
  org: "acme",
  project: "tools",
  namespace: "report",
  action: "summary",
  code: capabilityCode(
    "summary",
    "return { files: await mcp.filesystem.list_directory({ path: '.' }) };",
  ),
  description: "Summarise the workspace",
  tools_used: ["filesystem:list_directory"],
};

Deno.test("publishing needs a Bearer key: 401 missing or invalid, 403 revoked", async () => {
  const server = await testServer();
  try {
    const post = (headers: Record<string, string>) =>
      server.request("/mcp", {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify(request),
      });
    const missing = await post({});
    assert.equal(missing.status, 401);
    assert.match(missing.headers.get("www-authenticate") ?? "", /^Bearer/);
    const missingBody = await missing.json();
    assert.equal(missingBody.error, "unauthorized");
    assert.match(missingBody.message, /Authorization: Bearer/);
    for (
      const header of ["Basic abc", "Bearer", "Bearer pml_short", `Bearer pml_${"A".repeat(43)}`]
    ) {
      const response = await post({ authorization: header });
      assert.equal(response.status, 401, header);
      assert.ok(["unauthorized", "invalid_api_key"].includes((await response.json()).error));
    }
    const [key] = await server.store.listApiKeys();
    await server.store.revokeApiKey(key.id, "2026-01-01T00:00:00.000Z");
    const revoked = await post({ authorization: `Bearer ${server.key}` });
    assert.equal(revoked.status, 403);
    assert.deepEqual(await revoked.json(), {
      error: "revoked_api_key",
      message: `API key "${key.id}" was revoked at 2026-01-01T00:00:00.000Z`,
    });
    assert.equal(await server.store.getEntry("acme.tools.report.summary"), undefined);
  } finally {
    await server.close();
  }
});

Deno.test("a published capability is served at its hash FQDN; a new version moves the hash", async () => {
  const server = await testServer();
  try {
    const created = await server.publish(request);
    assert.equal(created.status, 201);
    const hash = await sha256(request.code);
    const fqdn = `acme.tools.report.summary.${hash.slice(0, 4)}`;
    assert.deepEqual(await created.json(), { fqdn });
    assert.equal(created.headers.get("location"), `/mcp/${fqdn}`);

    const served = await server.request(`/mcp/${fqdn}`);
    assert.equal(served.status, 200);
    assert.equal(await served.text(), request.code);
    assert.equal(served.headers.get("x-pml-type"), "deno");
    assert.equal(served.headers.get("x-pml-routing"), "client"); // uses filesystem
    assert.equal(served.headers.get("etag"), `"${hash}"`);

    const listed = await (await server.request("/mcp?tool=report:summary")).json();
    assert.deepEqual(listed.items.map((i: { fqdn: string }) => i.fqdn), [fqdn]);
    assert.equal(listed.items[0].description, "Summarise the workspace");

    const v2 = { ...request, code: capabilityCode("summary", "return 2;"), tools_used: [] };
    const second = await server.publish(v2);
    assert.equal(second.status, 201);
    const fqdn2 = (await second.json()).fqdn;
    assert.notEqual(fqdn2, fqdn);
    const old = await server.request(`/mcp/${fqdn}`);
    assert.equal(old.status, 404);
    const oldBody = await old.json();
    assert.equal(oldBody.error, "hash_mismatch");
    assert.equal(oldBody.currentFqdn, fqdn2);
    const current = await server.request(`/mcp/${fqdn2}`);
    assert.equal(current.headers.get("x-pml-routing"), "server"); // uses no tool
    assert.equal(await current.text(), v2.code);

    const again = await server.publish(v2);
    assert.equal(again.status, 201);
    assert.deepEqual(await again.json(), { fqdn: fqdn2 });
  } finally {
    await server.close();
  }
});

Deno.test("routing of a capability: server tools only → server; undeclared tools → client", async () => {
  const server = await testServer();
  try {
    const routingOf = async (extra: Record<string, unknown>, action: string) => {
      const { tools_used: _drop, ...base } = request;
      const response = await server.publish({
        ...base,
        action,
        code: capabilityCode(action),
        ...extra,
      });
      assert.equal(response.status, 201);
      const served = await server.request(`/mcp/${(await response.json()).fqdn}`);
      await served.body?.cancel();
      return served.headers.get("x-pml-routing");
    };
    assert.equal(
      await routingOf({ tools_used: ["json:parse", "tavily:tavily-search"] }, "a"),
      "server",
    );
    assert.equal(await routingOf({ tools_used: ["json:parse", "shell:exec"] }, "b"), "client");
    assert.equal(await routingOf({ tools_used: ["unknown:tool"] }, "c"), "client");
    assert.equal(await routingOf({}, "d"), "client");
  } finally {
    await server.close();
  }
});

Deno.test("seeded names are reserved: publishing under pml.std or pml.mcp answers 409", async () => {
  const server = await testServer();
  try {
    const before = await server.store.getEntry("pml.std.demo.echo");
    const response = await server.publish({
      org: "pml",
      project: "std",
      namespace: "demo",
      action: "echo",
      code: capabilityCode("echo", "return 'pwned';"),
    });
    assert.equal(response.status, 409);
    assert.equal((await response.json()).error, "reserved_name");
    assert.deepEqual(await server.store.getEntry("pml.std.demo.echo"), before);
  } finally {
    await server.close();
  }
});

Deno.test("POST /mcp with a JSON-RPC body goes to the injected MCP handler (501 without one)", async () => {
  const rpc = { jsonrpc: "2.0", id: 1, method: "tools/list" };
  const plain = await testServer();
  try {
    const response = await plain.publish(rpc);
    assert.equal(response.status, 501);
    assert.equal((await response.json()).error, "mcp_not_enabled");
    const unauthenticated = await plain.request("/mcp", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(rpc),
    });
    assert.equal(unauthenticated.status, 401);
    await unauthenticated.body?.cancel();
  } finally {
    await plain.close();
  }
  const calls: { parsedBody?: unknown; keyId: string; method: string }[] = [];
  const server = await testServer({
    deps: {
      mcp: (req, context) => {
        calls.push({
          parsedBody: context.parsedBody,
          keyId: context.apiKey.id,
          method: req.method,
        });
        return Promise.resolve(new Response("{}", { status: 200 }));
      },
    },
  });
  try {
    const [{ id }] = await server.store.listApiKeys();
    assert.equal((await server.publish(rpc)).status, 200);
    assert.equal((await server.publish([rpc])).status, 200);
    const sse = await server.publish(rpc, { accept: "application/json, text/event-stream" });
    assert.equal(sse.status, 200);
    const stream = await server.request("/mcp", {
      headers: { accept: "text/event-stream", authorization: `Bearer ${server.key}` },
    });
    assert.equal(stream.status, 200);
    assert.deepEqual(calls, [
      { parsedBody: rpc, keyId: id, method: "POST" },
      { parsedBody: [rpc], keyId: id, method: "POST" },
      { parsedBody: undefined, keyId: id, method: "POST" },
      { parsedBody: undefined, keyId: id, method: "GET" },
    ]);
    // Publishing still works next to the MCP handler.
    assert.equal((await server.publish(request)).status, 201);
    // A plain catalog GET is not MCP.
    assert.equal((await server.request("/mcp")).status, 200);
  } finally {
    await server.close();
  }
});
