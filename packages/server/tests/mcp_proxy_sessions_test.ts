/**
 * The http proxy's upstream sessions: reused from call to call, one per BYOK key, and opened again
 * when the upstream ends one. The upstream is the SDK's own Streamable HTTP server on a loopback
 * socket, counting its sessions and the `Authorization` header of each request.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { mcpMetadataEntry } from "../src/registry/mcp_metadata.ts";
import type { Store } from "../src/store/store.ts";
import { byokHeader, callTool, connectClient, mcpTestServer } from "./mcp_helpers.ts";
import { startCountingUpstream } from "./upstream.ts";

/** Registers `counting:echo` at `proxyTo`, its key `COUNTING_TOKEN` sent as a bearer token. */
async function registerCounting(store: Store, proxyTo: string) {
  const dir = await Deno.makeTempDir({ prefix: "pml-sessions-" });
  const path = join(dir, "counting.json");
  await Deno.writeTextFile(
    path,
    JSON.stringify({
      type: "http",
      description: "the SDK's server, counting its sessions",
      proxyTo,
      envRequired: ["COUNTING_TOKEN"],
      byok: { env: "COUNTING_TOKEN", header: "Authorization", format: "Bearer {key}" },
      tools: [{
        name: "counting:echo",
        description: "Echoes the message with the session's number",
        inputSchema: {
          type: "object",
          properties: { message: { type: "string" } },
          required: ["message"],
        },
      }],
    }),
  );
  assert.equal(await store.putEntry(await mcpMetadataEntry(path, new Date().toISOString())), true);
  await Deno.remove(dir, { recursive: true });
}

async function setUp() {
  const upstream = startCountingUpstream();
  const server = await mcpTestServer({ handler: { log: () => {} } });
  await registerCounting(server.store, upstream.url);
  const client = (key: string) =>
    connectClient({ app: server.app }, {
      authorization: `Bearer ${server.key}`,
      "x-pml-byok": byokHeader({ COUNTING_TOKEN: key }),
    });
  const close = async () => {
    await server.close();
    await upstream.close();
  };
  return { upstream, client, close };
}

Deno.test("two keys never share an upstream session; each key's calls reuse its own", async () => {
  const { upstream, client, close } = await setUp();
  try {
    const alice = await client("key-alice");
    const bob = await client("key-bob");
    try {
      for (let i = 0; i < 3; i++) {
        for (const [who, user] of [["alice", alice], ["bob", bob]] as const) {
          const result = await callTool(user, "counting__echo", { message: `${who} ${i}` });
          assert.equal(result.isError, undefined, result.content[0]?.text);
          assert.match(result.content[0].text, new RegExp(`^${who} ${i} \\(session [12]\\)$`));
        }
      }
      const together = await Promise.all(
        Array.from(
          { length: 8 },
          (_, i) => callTool(i % 2 ? bob : alice, "counting:echo", { message: `burst ${i}` }),
        ),
      );
      assert.ok(together.every((result) => result.isError === undefined));
    } finally {
      await alice.close();
      await bob.close();
    }
    assert.equal(upstream.calls.length, 14);
    assert.deepEqual(
      [...upstream.sessions.values()].sort(),
      ["Bearer key-alice", "Bearer key-bob"],
      "one session per key, whatever the number of calls",
    );
    for (const call of upstream.calls) {
      assert.equal(
        call.authorization,
        upstream.sessions.get(call.session),
        "a call in a session of another key",
      );
    }
  } finally {
    await close();
  }
});

Deno.test("a session the upstream ended is opened again, and the call runs once", async () => {
  const { upstream, client, close } = await setUp();
  try {
    const alice = await client("key-alice");
    try {
      const first = await callTool(alice, "counting__echo", { message: "before" });
      assert.equal(first.content[0].text, "before (session 1)");
      await upstream.dropSessions();
      const second = await callTool(alice, "counting__echo", { message: "after" });
      assert.equal(second.isError, undefined, second.content[0]?.text);
      assert.equal(second.content[0].text, "after (session 2)");
      const third = await callTool(alice, "counting__echo", { message: "again" });
      assert.equal(third.content[0].text, "again (session 2)");
    } finally {
      await alice.close();
    }
    assert.equal(upstream.sessions.size, 2);
    assert.deepEqual(upstream.calls.map((call) => call.authorization), [
      "Bearer key-alice",
      "Bearer key-alice",
      "Bearer key-alice",
    ]);
  } finally {
    await close();
  }
});
