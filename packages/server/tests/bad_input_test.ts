/** Bad input answers a clear 4xx JSON body and stores nothing. */
import assert from "node:assert/strict";
import { capabilityCode, testServer } from "./helpers.ts";

async function assertError(response: Response, status: number, error: string): Promise<string> {
  assert.equal(response.status, status, `${response.url} → ${response.status}`);
  assert.equal(response.headers.get("content-type"), "application/json");
  const body = await response.json();
  assert.equal(body.error, error);
  assert.equal(typeof body.message, "string");
  return body.message;
}

Deno.test("malformed FQDNs answer 400 invalid_fqdn", async () => {
  const server = await testServer();
  try {
    const cases = [
      "pml.std.demo", // too few parts
      "pml",
      "pml.std.demo.echo.abcd.extra", // too many parts
      "a.b.c.d.e.f.g",
      "..%2f..%2fetc%2fpasswd", // path traversal, encoded
      "pml.std.demo.echo%2f..%2f..",
      "pml.std.%2e%2e.echo",
      "pml.std..echo",
      "pml.std.demo.echo.",
      ".pml.std.demo.echo",
      "pml.std.d%C3%A9mo.echo", // non-ASCII
      "pml.std.demo.%E2%80%AEecho",
      "pml.std.demo.%00echo",
      "pml.std.demo.echo%20",
      "pml.std.demo.%zz", // bad percent-encoding
      `pml.std.demo.${"a".repeat(10 * 1024)}`, // 10 KB name
      `${"x".repeat(65)}.std.demo.echo`,
      "pml.std.demo/echo",
      "pml.std.-demo.echo",
    ];
    for (const fqdn of cases) {
      const message = await assertError(await server.request(`/mcp/${fqdn}`), 400, "invalid_fqdn");
      assert.ok(message.length < 400, `message for ${fqdn.slice(0, 30)} is short`);
    }
    // The URL parser resolves a literal "/../" before routing: it never reaches a file.
    const dotted = await server.request("/mcp/../etc/passwd");
    assert.equal(dotted.status, 404);
    assert.equal((await dotted.json()).error, "not_found");
  } finally {
    await server.close();
  }
});

Deno.test("bad pagination and filter values answer 400 invalid_query", async () => {
  const server = await testServer();
  try {
    const cases = [
      "page=-1",
      "page=0",
      "page=abc",
      "page=1.5",
      "page=1e3",
      "page=",
      "page=99999999999999999999",
      "page=1000001",
      "limit=0",
      "limit=-5",
      "limit=101",
      "limit=1000000",
      "limit=ten",
      "limit=0x10",
      "page=1&page=2",
      "type=python",
      "type=",
      "tool=noColon",
      "tool=a:b:c",
      `tool=${"a".repeat(200)}:b`,
      `q=${"q".repeat(201)}`,
    ];
    for (const query of cases) {
      await assertError(await server.request(`/mcp?${query}`), 400, "invalid_query");
    }
    const ok = await server.request("/mcp?page=1000000&limit=100");
    assert.equal(ok.status, 200);
    assert.deepEqual((await ok.json()).items, []);
  } finally {
    await server.close();
  }
});

Deno.test("huge or malformed publish bodies answer 4xx and store nothing", async () => {
  const server = await testServer();
  try {
    const versionBefore = await server.store.registryVersion();
    const valid = {
      org: "acme",
      project: "p",
      namespace: "n",
      action: "run",
      code: capabilityCode("run"),
    };
    const big = JSON.stringify({ ...valid, code: `// ${"x".repeat(1024 * 1024)}\n${valid.code}` });
    await assertError(await server.publish(big), 413, "payload_too_large");
    // Without Content-Length (streamed) the limit still holds.
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 20; i++) controller.enqueue(new Uint8Array(64 * 1024).fill(32));
        controller.close();
      },
    });
    await assertError(
      await server.request("/mcp", {
        method: "POST",
        headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
        body: chunks,
      }),
      413,
      "payload_too_large",
    );
    await assertError(await server.publish("{not json"), 400, "invalid_json");
    await assertError(await server.publish(""), 400, "invalid_json");
    await assertError(
      await server.publish(new Uint8Array([0x7b, 0xff, 0x7d])),
      400,
      "invalid_json",
    );
    await assertError(await server.publish("[1,2]"), 400, "invalid_request");
    await assertError(await server.publish("null"), 400, "invalid_request");
    await assertError(await server.publish("42"), 400, "invalid_request");
    await assertError(
      await server.publish(JSON.stringify(valid), { "content-type": "text/plain" }),
      415,
      "unsupported_media_type",
    );
    const invalid: Record<string, unknown>[] = [
      { ...valid, org: undefined },
      { ...valid, code: "" },
      { ...valid, code: 42 },
      { ...valid, org: "../etc" },
      { ...valid, namespace: "a.b" },
      { ...valid, action: "x".repeat(65) },
      { ...valid, project: "prøject" },
      { ...valid, tools_used: "filesystem:read_file" },
      { ...valid, tools_used: ["no-colon"] },
      { ...valid, description: 7 },
      { ...valid, extra: true },
    ];
    for (const body of invalid) {
      await assertError(await server.publish(body), 400, "invalid_request");
    }
    await assertError(
      await server.publish({ ...valid, code: "export async function run( {" }),
      400,
      "invalid_code",
    );
    const wrongExport = await assertError(
      await server.publish({ ...valid, code: "export async function other() {}" }),
      400,
      "invalid_code",
    );
    assert.match(wrongExport, /exports no function "run"/);
    assert.equal(await server.store.registryVersion(), versionBefore);
    assert.deepEqual(await server.store.listNames("publish"), []);
    // The same body, well formed, is accepted: the failures above were about the input.
    assert.equal((await server.publish(valid)).status, 201);
    assert.deepEqual(await server.store.listNames("publish"), ["acme.p.n.run"]);
  } finally {
    await server.close();
  }
});

Deno.test("capability code may export the action as a const or through an export list", async () => {
  const server = await testServer();
  try {
    const base = { org: "acme", project: "p", namespace: "n" };
    for (
      const [action, code] of [
        ["a", "export const a = async () => 1;"],
        ["b", "async function impl() { return 2; }\nexport { impl as b };"],
      ]
    ) {
      assert.equal((await server.publish({ ...base, action, code })).status, 201, action);
    }
  } finally {
    await server.close();
  }
});
