/**
 * The http proxy's upstream sessions: reused from call to call, one per BYOK key, and opened again
 * when the upstream ends one. The upstream is the SDK's own Streamable HTTP server on a loopback
 * socket, counting its sessions and the `Authorization` header of each request, answering in JSON
 * or in SSE (with other events before the answer).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { mcpMetadataEntry } from "../src/registry/mcp_metadata.ts";
import type { Store } from "../src/store/store.ts";
import { byokHeader, callTool, connectClient, mcpTestServer } from "./mcp_helpers.ts";
import { SIGN_IN, startCountingUpstream } from "./upstream.ts";
import { ErrorCode, UrlElicitationRequiredError } from "../src/mcp/sdk/types.ts";

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

async function setUp(options: { sse?: boolean; idleMs?: number; timeoutMs?: number } = {}) {
  const upstream = startCountingUpstream(options);
  const logs: string[] = [];
  const server = await mcpTestServer({
    handler: {
      log: (line) => logs.push(line),
      proxyIdleMs: options.idleMs,
      proxyTimeoutMs: options.timeoutMs,
    },
  });
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
  return { upstream, client, logs, close };
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

Deno.test("a session idle for proxyIdleMs is ended upstream, and the next call opens another", async () => {
  const { upstream, client, close } = await setUp({ idleMs: 20 });
  try {
    const alice = await client("key-alice");
    try {
      const first = await callTool(alice, "counting__echo", { message: "one" });
      assert.equal(first.content[0].text, "one (session 1)");
      // No timed assertion: wait (within a generous bound) until the session is ended.
      for (let waited = 0; upstream.deleted.length === 0; waited += 10) {
        assert.ok(waited < 20_000, "the idle session was never ended");
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.deepEqual(upstream.deleted, [...upstream.sessions.keys()]);
      const after = await callTool(alice, "counting__echo", { message: "two" });
      assert.equal(after.content[0].text, "two (session 2)");
    } finally {
      await alice.close();
    }
  } finally {
    await close();
  }
});

Deno.test("a call past its bound is an error, not made again, and its session is dropped", async () => {
  const { upstream, client, close } = await setUp({ sse: true, timeoutMs: 2_000 }); // generous: it bounds `initialize` too;
  try {
    const alice = await client("key-alice");
    try {
      const first = await callTool(alice, "counting__echo", { message: "one" });
      assert.equal(first.content[0].text, "one (session 1)");
      const hung = await callTool(alice, "counting__echo", { message: "hang" });
      assert.equal(hung.isError, true);
      assert.equal(hung.structuredContent.code, "UPSTREAM_ERROR");
      assert.match(hung.structuredContent.message, /timed out/i);
      const after = await callTool(alice, "counting__echo", { message: "two" });
      assert.equal(after.content[0].text, "two (session 2)", "the timed-out session was dropped");
    } finally {
      await alice.close();
    }
    assert.deepEqual(
      upstream.calls.map((call) => [...upstream.sessions.keys()].indexOf(call.session) + 1),
      [1, 1, 2],
      "the call that timed out was made once",
    );
  } finally {
    await close();
  }
});

for (const sse of [false, true]) {
  const form = sse ? "SSE answers, other events first" : "JSON answers";
  Deno.test(`concurrent calls of two keys: each caller gets its own answer, from its key's session (${form})`, async () => {
    const { upstream, client, close } = await setUp({ sse });
    try {
      const users = { alice: await client("key-alice"), bob: await client("key-bob") };
      try {
        const calls = Array.from({ length: 24 }, (_, i) => {
          const who = i % 3 ? "alice" : "bob";
          return { who, message: `${who} ${i}` };
        });
        const results = await Promise.all(
          calls.map(({ who, message }) =>
            callTool(users[who as keyof typeof users], "counting__echo", { message })
          ),
        );
        const sessionOf = (authorization: string) =>
          [...upstream.sessions.values()].indexOf(authorization) + 1;
        results.forEach((result, i) => {
          const { who, message } = calls[i];
          assert.equal(result.isError, undefined, result.content[0]?.text);
          assert.equal(
            result.content[0].text,
            `${message} (session ${sessionOf(`Bearer key-${who}`)})`,
          );
        });
      } finally {
        await users.alice.close();
        await users.bob.close();
      }
      assert.equal(upstream.sessions.size, 2);
      assert.equal(upstream.calls.length, 24);
      for (const call of upstream.calls) {
        assert.equal(call.authorization, upstream.sessions.get(call.session));
      }
    } finally {
      await close();
    }
  });

  Deno.test(`an upstream's error is an isError result without the key, and the session stays (${form})`, async () => {
    const { upstream, client, close } = await setUp({ sse });
    try {
      const alice = await client("key-alice-SECRET");
      try {
        const failed = await callTool(alice, "counting__echo", { message: "fail please" });
        assert.equal(failed.isError, true);
        assert.equal(failed.structuredContent.code, "UPSTREAM_ERROR");
        assert.match(failed.structuredContent.message, /refused with Bearer \[redacted\]/);
        // The upstream's MCP error, prefixed once (its SDK sent the prefix, the client added one).
        assert.match(failed.structuredContent.message, /: MCP error -32602: refused with /);
        assert.equal(failed.structuredContent.message.match(/MCP error/g)?.length, 1);
        assert.ok(!JSON.stringify(failed).includes("SECRET"), JSON.stringify(failed));
        const next = await callTool(alice, "counting__echo", { message: "then" });
        assert.equal(next.content[0]?.text, "then (session 1)");
      } finally {
        await alice.close();
      }
      assert.equal(upstream.sessions.size, 1, "an answered error keeps the session");
      assert.equal(upstream.calls.length, 2);
    } finally {
      await close();
    }
  });
}

for (const sse of [false, true]) {
  const form = sse ? "SSE answers, other events first" : "JSON answers";
  Deno.test(`an upstream's sign-in request (-32042) reaches the caller as the SDK's UrlElicitationRequiredError with its URL, logged; the session stays (${form})`, async () => {
    const { upstream, client, logs, close } = await setUp({ sse });
    try {
      const alice = await client("key-alice");
      try {
        const error = await alice.callTool({
          name: "counting__echo",
          arguments: { message: "signin" },
        })
          .then(() => undefined, (error: unknown) => error);
        assert.ok(error instanceof UrlElicitationRequiredError, String(error));
        assert.equal(error.code, ErrorCode.UrlElicitationRequired);
        assert.deepEqual(error.elicitations, [SIGN_IN]);
        // The upstream's message, prefixed once (by the caller's SDK client).
        assert.equal(error.message, "MCP error -32042: URL elicitation required");
        assert.deepEqual(logs, [
          `pml-server: Cannot call "counting:echo" on its MCP server ${
            new URL(upstream.url).origin
          }: ` +
          "MCP error -32042: URL elicitation required",
        ]);
        const next = await callTool(alice, "counting__echo", { message: "signed in" });
        assert.equal(next.content[0]?.text, "signed in (session 1)");
      } finally {
        await alice.close();
      }
      assert.equal(upstream.sessions.size, 1, "an answered sign-in request keeps the session");
    } finally {
      await close();
    }
  });
}

Deno.test("the key sent with a call appears nowhere in an upstream's sign-in request as the caller gets it, nor in the log", async () => {
  const { client, logs, close } = await setUp();
  // A key as API keys often are (base64: '+', '/' and '='), which a URL query percent-encodes.
  const key = `k+3y/SECRET-${crypto.randomUUID()}==`;
  try {
    const alice = await client(key);
    try {
      const error = await alice.callTool({
        name: "counting__echo",
        arguments: { message: "signin quoting the key" },
      }).then(() => undefined, (error: unknown) => error);
      assert.ok(error instanceof UrlElicitationRequiredError, String(error));
      const received = JSON.stringify({ message: error.message, data: error.data });
      assert.ok(!received.includes("SECRET"), received);
      // What the key was in stands as "[redacted]"; the rest is the upstream's.
      assert.deepEqual(error.elicitations, [{
        mode: "url",
        elicitationId: "sign-in-for Bearer [redacted]",
        url: "https://auth.example.com/sign-in?token=Bearer%20[redacted]",
        message: "Sign in, holder of Bearer [redacted]",
      }]);
      assert.equal(error.message, "MCP error -32042: Sign in first, Bearer [redacted]");
    } finally {
      await alice.close();
    }
    assert.equal(logs.length, 1);
    assert.ok(!logs[0].includes("SECRET"), logs[0]);
  } finally {
    await close();
  }
});

Deno.test("a sign-in request naming a URL other than http(s) is an UPSTREAM_ERROR result that says why; other failures stay UPSTREAM_ERROR", async () => {
  const { client, close } = await setUp();
  try {
    const alice = await client("key-alice");
    try {
      const elsewhere = await callTool(alice, "counting__echo", { message: "signin elsewhere" });
      assert.equal(elsewhere.isError, true);
      assert.equal(elsewhere.structuredContent.code, "UPSTREAM_ERROR");
      assert.match(
        elsewhere.structuredContent.message,
        /MCP error -32042: URL elicitation required/,
      );
      assert.match(
        elsewhere.structuredContent.message,
        /not all URL elicitations of an http: or https: URL/,
      );
      assert.ok(!JSON.stringify(elsewhere).includes("id_ed25519"), JSON.stringify(elsewhere));
      const failed = await callTool(alice, "counting__echo", { message: "fail" });
      assert.equal(failed.structuredContent.code, "UPSTREAM_ERROR");
    } finally {
      await alice.close();
    }
  } finally {
    await close();
  }
});
