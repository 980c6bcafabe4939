/**
 * End to end: a remote MCP server (the SDK's `Server` over Streamable HTTP, on loopback) behind an
 * `http` registry entry of a real `pml-server` answers a call with `UrlElicitationRequired`
 * (-32042: the user must open a URL to sign in). The agent's SDK client, talking to a spawned
 * `pml stdio` or `pml serve`, gets the SDK's `UrlElicitationRequiredError` with the upstream's URL,
 * and never the BYOK key the call carried.
 */
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { ErrorCode, UrlElicitationRequiredError } from "../../packages/pml/src/sdk/types.ts";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { SIGN_IN, startCountingUpstream } from "../../packages/server/tests/upstream.ts";
import { startCloud } from "./_cloud.ts";
import { spawnServe } from "./_serve.ts";
import { connectStdio } from "./_spawn.ts";

const PML_JSON = {
  permissions: { allow: ["upstream"], ask: [], deny: [] },
  env: ["UPSTREAM_TOKEN"],
};

/** The error `client`'s call of `upstream:echo` with `message` throws (fails if it returns). */
async function signInError(client: Client, message: string): Promise<unknown> {
  try {
    const result = await client.callTool({ name: "upstream__echo", arguments: { message } });
    throw new Error(`expected a sign-in error, got ${JSON.stringify(result)}`);
  } catch (error) {
    return error;
  }
}

/** The counting upstream (`signin…` messages) as both `http` entries of a real cloud. */
async function setUp(token: string) {
  const upstream = startCountingUpstream();
  const base = upstream.url.replace(/\/mcp$/, "");
  const cloud = await startCloud(base, { upstream: "/mcp", open: "/mcp" });
  const env = { PML_CLOUD_URL: cloud.url, PML_API_KEY: cloud.key, UPSTREAM_TOKEN: token };
  return {
    env,
    async [Symbol.asyncDispose]() {
      await cloud[Symbol.asyncDispose]();
      await upstream.close();
    },
  };
}

async function connectHttp(url: string) {
  const client = new Client({ name: "e2e-http", version: "1" }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return Object.assign(client, { [Symbol.asyncDispose]: () => client.close() });
}

Deno.test("e2e sign-in: an upstream's URL elicitation reaches the agent through pml stdio and pml serve as the SDK's UrlElicitationRequiredError with its URL", async () => {
  await using setup = await setUp("tok-upstream-123");
  await using ws = tempWorkspace(PML_JSON);
  await using stdio = await connectStdio(ws, { env: setup.env });
  await using serve = await spawnServe(ws, setup.env);
  await using http = await connectHttp(serve.url);
  for (const [path, client] of [["pml stdio", stdio], ["pml serve", http]] as const) {
    const error = await signInError(client, "signin");
    assert(error instanceof UrlElicitationRequiredError, `${path}: ${error}`);
    assertEquals(error.code, ErrorCode.UrlElicitationRequired, path);
    assertEquals(error.elicitations, [SIGN_IN], path);
    assertEquals(error.message, "MCP error -32042: URL elicitation required", path);
    // Once signed in, the same tool works on the same path.
    const echoed = await client.callTool({
      name: "upstream__echo",
      arguments: { message: "signed in" },
    });
    assertEquals(echoed.isError, undefined, path);
  }
});

Deno.test("e2e sign-in: the BYOK key a call carried is nowhere in the sign-in request the agent gets through pml stdio", async () => {
  const token = `k+3y/SECRET-${crypto.randomUUID()}==`;
  await using setup = await setUp(token);
  await using ws = tempWorkspace(PML_JSON);
  await using stdio = await connectStdio(ws, { env: setup.env });
  const error = await signInError(stdio, "signin quoting the key");
  assert(error instanceof UrlElicitationRequiredError, String(error));
  const received = JSON.stringify({ message: error.message, data: error.data });
  assert(!received.includes("SECRET"), received);
  assertEquals(
    error.elicitations[0].url,
    "https://auth.example.com/sign-in?token=Bearer%20[redacted]",
  );
  assertEquals(error.message, "MCP error -32042: Sign in first, Bearer [redacted]");
});
