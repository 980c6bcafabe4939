/**
 * Through real sockets: createApp() behind Deno.serve on 127.0.0.1 port 0, and the
 * `bin/pml-server` launcher (serve, keys, registry sync) as a subprocess.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { waitForLine } from "../../pml/src/testing/wait_for_line.ts";
import { capabilityCode, testServer } from "./helpers.ts";

const LAUNCHER = join(import.meta.dirname!, "../../../bin/pml-server");

Deno.test("createApp behind Deno.serve on 127.0.0.1:0 answers over TCP", async () => {
  const server = await testServer();
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, server.app);
  try {
    const base = `http://127.0.0.1:${http.addr.port}`;
    const redirect = await fetch(`${base}/mcp/pml.std.demo.echo`, { redirect: "manual" });
    assert.equal(redirect.status, 302);
    await redirect.body?.cancel();
    const response = await fetch(`${base}/mcp/pml.std.demo.echo`); // follows the redirect
    assert.equal(response.status, 200);
    assert.match(response.url, /\/mcp\/pml\.std\.demo\.echo\.[0-9a-f]{4}$/);
    const etag = response.headers.get("etag")!;
    assert.match(await response.text(), /export const __meta__/);
    const cached = await fetch(response.url, { headers: { "if-none-match": etag } });
    assert.equal(cached.status, 304);
    await cached.body?.cancel();
    const created = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        org: "o",
        project: "p",
        namespace: "n",
        action: "go",
        code: capabilityCode("go"),
      }),
    });
    assert.equal(created.status, 201);
    await created.body?.cancel();
  } finally {
    await http.shutdown();
    await server.close();
  }
});

async function cli(args: string[], env: Record<string, string>) {
  const output = await new Deno.Command(LAUNCHER, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  return {
    code: output.code,
    stdout: new TextDecoder().decode(output.stdout),
    stderr: new TextDecoder().decode(output.stderr),
  };
}

Deno.test("bin/pml-server: keys create/list/revoke, registry sync, serve until SIGTERM", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "pml-cli-" });
  const env = { PML_DATA_DIR: dataDir, PML_DATABASE_URL: "" };
  try {
    const created = await cli(["keys", "create", "--label", "ci"], env);
    assert.equal(created.code, 0, created.stderr);
    const key = created.stdout.split("\n")[0];
    assert.match(key, /^pml_[A-Za-z0-9_-]{43}$/);
    const list = await cli(["keys", "list", "--json"], env);
    const [record] = JSON.parse(list.stdout);
    assert.equal(record.label, "ci");
    assert.equal(record.prefix, key.slice(0, 12));
    assert.equal(record.revokedAt, null);
    assert.ok(!list.stdout.includes(key), "the key is never shown again");
    const table = await cli(["keys", "list"], env);
    assert.match(table.stdout, /^ID\s+PREFIX\s+CREATED\s+REVOKED\s+LABEL/);
    const sync = await cli(["registry", "sync"], env);
    assert.equal(sync.code, 0, sync.stderr);
    assert.match(sync.stdout, /registry sync: \d+ added, 0 updated, 0 removed, 0 unchanged/);
    const again = await cli(["registry", "sync"], env);
    assert.match(again.stdout, /registry sync: 0 added, 0 updated, 0 removed, \d+ unchanged/);
    assert.equal((await cli(["keys", "revoke", "key_nope"], env)).code, 1);
    assert.equal((await cli(["bogus"], env)).code, 2);
    assert.equal((await cli(["serve", "--port", "nope"], env)).code, 1);

    const child = new Deno.Command(LAUNCHER, {
      args: ["serve", "--port", "0"],
      env,
      stdout: "piped",
      stderr: "null",
    }).spawn();
    const { match, rest } = await waitForLine(
      child.stdout,
      /^pml-server listening on (http:\/\/127\.0\.0\.1:\d+\/)$/m,
      "pml-server serve",
    );
    const health = await fetch(`${match[1]}health`);
    assert.deepEqual(await health.json(), { status: "ok", store: "sqlite", version: "0.1.0" });
    const publish = await fetch(`${match[1]}mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        org: "o",
        project: "p",
        namespace: "n",
        action: "go",
        code: capabilityCode("go"),
      }),
    });
    assert.equal(publish.status, 201);
    await publish.body?.cancel();
    await cli(["keys", "revoke", record.id], env);
    const revoked = await fetch(`${match[1]}mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(revoked.status, 403);
    await revoked.body?.cancel();
    child.kill("SIGTERM");
    assert.equal((await child.status).code, 0);
    await rest;
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});
