/**
 * End to end: a remote server of `private_mcps` protected by OAuth (the MCP SDK's server auth:
 * `mcpAuthRouter`, `requireBearerAuth`, its demo in-memory provider; `tests/fixtures/`), behind a
 * spawned `pml stdio` and `pml serve`. The first call waits for the user to sign in (the agent is
 * told how, never the link), the human signs in (the link on pml's stderr, or `pml auth NAME`),
 * `pml:continue` runs the call, an expired token is refreshed without the human, a call that needs
 * a wider scope waits for a second sign-in (step-up), and `pml auth --logout` revokes and forgets.
 */
import { join } from "node:path";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { StdioClientTransport } from "../../packages/pml/src/sdk/stdio_client.ts";
import {
  type CallToolResult,
  ElicitationCompleteNotificationSchema,
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from "../../packages/pml/src/sdk/types.ts";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { spawnServe } from "./_serve.ts";
import { connectStdio, PML_BIN, pmlEnv, runPml } from "./_spawn.ts";
import { lastLink, openLink, signInWithCli, startOAuthServer } from "./_oauth.ts";

function pmlJson(url: string) {
  return {
    permissions: { allow: ["secure"], ask: [], deny: [] },
    private_mcps: { secure: { type: "http", proxyTo: url } },
  };
}

type Body = Record<string, unknown>;
const body = (r: unknown) => ((r as CallToolResult).structuredContent ?? {}) as Body;

/** Asserts `r` is a sign-in wait for `secure` that shows no link; returns its workflow id. */
function assertWaits(r: unknown): string {
  const b = body(r);
  assertEquals(b.status, "waiting_for_human", textOf(r as CallToolResult));
  assertEquals(b.reason, "sign_in");
  assertEquals(b.server, "secure");
  const text = JSON.stringify(r);
  assertStringIncludes(text, "pml auth secure");
  assert(!/authorize|state=|code_challenge|127\.\d+\.\d+\.\d+:\d+/.test(text), text);
  return b.workflow_id as string;
}

async function until(check: () => boolean) {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
}

Deno.test("e2e oauth through pml stdio: wait, sign in from the printed link, continue, refresh, step-up, logout", async () => {
  await using server = await startOAuthServer();
  await using ws = tempWorkspace(pmlJson(server.url()));
  await using pml = await connectStdio(ws);
  const call = (name: string) => pml.callTool({ name: `secure__${name}`, arguments: {} });

  // 1. The first call waits for the user; the link went to stderr only.
  const id = assertWaits(await call("whoami"));
  await until(() => lastLink(pml.stderr()) !== undefined);
  const link = lastLink(pml.stderr());
  assert(link, pml.stderr());

  // 2. Before the sign-in, pml:continue still waits.
  assertWaits(
    await pml.callTool({ name: "pml__continue", arguments: { workflow_id: id, decision: "yes" } }),
  );

  // 3. The human opens the link: the page says signed in, the client is told that the tool list
  // changed (the server's tools can be listed now), and the call goes on.
  let changed = 0;
  pml.setNotificationHandler(ToolListChangedNotificationSchema, () => void changed++);
  const page = await openLink(link);
  assertEquals(page.status, 200, page.text);
  assertStringIncludes(page.text, "secure is signed in");
  await until(() => changed > 0);
  assertEquals(changed, 1);
  const tools = (await pml.listTools()).tools.map((t) => t.name);
  assert(tools.includes("secure__whoami"), tools.join(", "));
  const done = await pml.callTool({
    name: "pml__continue",
    arguments: { workflow_id: id, decision: "yes" },
  });
  assertEquals(done.isError, undefined, textOf(done));
  assertStringIncludes(textOf(done), '"scopes":["mcp:tools"]');

  // The tokens: under PML's home, 0600, not in the workspace.
  const dir = join(ws.home, ".pml", "oauth");
  const files = [...Deno.readDirSync(dir)].map((e) => join(dir, e.name));
  assertEquals(files.length, 1);
  assertEquals(Deno.statSync(files[0]).mode! & 0o777, 0o600);
  assertEquals(Deno.statSync(dir).mode! & 0o777, 0o700);
  const stored = JSON.parse(Deno.readTextFileSync(files[0]));
  const first = stored.tokens.access_token as string;

  // 4. The access token expires: the next call refreshes it, without the human.
  await server.expire();
  const after = await call("whoami");
  assertEquals(after.isError, undefined, textOf(after));
  assertStringIncludes(textOf(after), "mcp:tools");
  const refreshed = JSON.parse(Deno.readTextFileSync(files[0])).tokens.access_token;
  assert(refreshed !== first, "a new access token");

  // 5. Step-up: admin_report needs mcp:admin, the user signs in again with the wider scope.
  const before = pml.stderr().length;
  const stepUp = assertWaits(await call("admin_report"));
  await until(() => lastLink(pml.stderr().slice(before)) !== undefined);
  const wider = lastLink(pml.stderr().slice(before))!;
  assertStringIncludes(decodeURIComponent(wider), "mcp:admin");
  assertEquals((await openLink(wider)).status, 200);
  const report = await pml.callTool({
    name: "pml__continue",
    arguments: { workflow_id: stepUp, decision: "yes" },
  });
  assertEquals(textOf(report), "admin report of mcp");

  // 6. Logout revokes at the authorization server and forgets; the next call waits again.
  const listed = await runPml(ws, ["auth", "--list"]);
  assertStringIncludes(listed.stdout, "secure");
  assertStringIncludes(listed.stdout, "signed in (scope: mcp:tools mcp:admin)");
  const out = await runPml(ws, ["auth", "--logout", "secure"]);
  assertEquals(out.code, 0, out.text);
  assertStringIncludes(out.stdout, "revoked at its authorization server");
  assertEquals([...Deno.readDirSync(dir)].filter((e) => e.name.endsWith(".json")).length, 0);
  assert((await server.seen()).revoked.length >= 1);
  assertWaits(await call("whoami"));
  const status = await runPml(ws, ["status"]);
  assertStringIncludes(status.text, "secure");
  assertStringIncludes(status.text, "waits for its user to sign in");
});

Deno.test("e2e oauth through pml serve: the call waits, the human runs `pml auth NAME`, the call continues", async () => {
  await using server = await startOAuthServer();
  await using ws = tempWorkspace(pmlJson(server.url()));
  await using serve = await spawnServe(ws);
  const client = new Client({ name: "e2e-http", version: "1" }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(serve.url)));
  try {
    const id = assertWaits(await client.callTool({ name: "secure__whoami", arguments: {} }));
    const cli = await signInWithCli(ws, "secure");
    assertEquals(cli.code, 0, cli.text);
    assertEquals(cli.page.status, 200, cli.page.text);
    assertStringIncludes(cli.text, "Signed in to secure");
    const done = await client.callTool({
      name: "pml__continue",
      arguments: { workflow_id: id, decision: "yes" },
    });
    assertStringIncludes(textOf(done), '"server":"mcp"');
    // Signed in once for every later call and session.
    const again = await client.callTool({ name: "secure__whoami", arguments: {} });
    assertStringIncludes(textOf(again), "mcp:tools");
  } finally {
    await client.close();
  }
});

Deno.test("e2e oauth through pml stdio, a client that elicits in URL mode: the sign-in link goes to the client's user, and the call continues at once", async () => {
  await using server = await startOAuthServer();
  await using ws = tempWorkspace(pmlJson(server.url()));
  const transport = new StdioClientTransport({
    command: PML_BIN,
    args: ["stdio"],
    cwd: ws.dir,
    env: pmlEnv(ws),
    stderr: "pipe",
  });
  const client = new Client(
    { name: "e2e-url", version: "1" },
    { capabilities: { elicitation: { url: {} } } },
  );
  const shown: { mode?: string; url?: string; message: string }[] = [];
  const completed: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    const params = req.params as { mode?: string; url?: string; message: string };
    shown.push(params);
    // The user opens it: the authorization server approves and redirects to pml's page.
    if (params.url) assertEquals((await openLink(params.url)).status, 200);
    return { action: "accept" };
  });
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
    completed.push(n.params.elicitationId);
  });
  await client.connect(transport);
  try {
    const result = await client.callTool({ name: "secure__whoami", arguments: {} });
    assertStringIncludes(textOf(result), '"scopes":["mcp:tools"]', JSON.stringify(result));
    assertEquals(shown.length, 1);
    assertEquals(shown[0].mode, "url");
    assertStringIncludes(shown[0].url!, "/authorize?");
    assertStringIncludes(shown[0].message, "Sign in to secure");
    assert(!JSON.stringify(result).includes("authorize"), "the agent's result has no link");
    for (let i = 0; i < 200 && completed.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    assertEquals(completed.length, 1, "the client is told the sign-in ended");
  } finally {
    await client.close();
  }
});
