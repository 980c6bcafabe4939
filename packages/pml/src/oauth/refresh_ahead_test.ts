/**
 * Refresh before expiry: a signed-in server's access token that expires within a minute is
 * refreshed before the next call is sent (the gateway's clock moved on; the server never said 401),
 * and one with time left is not. Against the OAuth-protected fixture (the SDK's server auth).
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { gatewayFor, humanLines, tempWorkspace, textOf } from "../testing/workspace.ts";
import { lastLink, openLink, startOAuthServer } from "../../../../tests/e2e/_oauth.ts";

Deno.test("oauth: a token about to expire is refreshed before the call, without a 401; one with time left is kept", async () => {
  await using server = await startOAuthServer();
  await using ws = tempWorkspace({
    permissions: { allow: ["secure"], ask: [], deny: [] },
    private_mcps: { secure: { type: "http", proxyTo: server.url() } },
  });
  let clock = Date.now();
  const human = humanLines();
  await using g = await gatewayFor(ws, { tell: human.tell, now: () => clock });
  const call = (name: string, args: Record<string, unknown> = {}) =>
    g.client.callTool({ name, arguments: args });
  const stored = () => {
    const dir = join(ws.home, ".pml", "oauth");
    const file = [...Deno.readDirSync(dir)].find((e) => e.name.endsWith(".json"))!;
    return JSON.parse(Deno.readTextFileSync(join(dir, file.name))).tokens.access_token as string;
  };

  const waiting = (await call("secure__whoami")).structuredContent as { workflow_id?: string };
  const id = waiting?.workflow_id;
  assertEquals((await openLink(lastLink(human.lines.join("\n"))!)).status, 200);
  assertStringIncludes(
    textOf(await call("pml__continue", { workflow_id: id, decision: "yes" })),
    "mcp:tools",
  );
  const first = stored();

  clock += 30 * 60 * 1000; // half of the hour left: kept
  assertStringIncludes(textOf(await call("secure__whoami")), "mcp:tools");
  assertEquals(stored(), first);

  const before = (await server.seen()).seen.length;
  clock += 29.5 * 60 * 1000; // 30 s left: refreshed first
  assertStringIncludes(textOf(await call("secure__whoami")), "mcp:tools");
  const second = stored();
  assert(second !== first, "a new access token");
  const sent = (await server.seen()).seen.slice(before);
  assert(
    sent.filter((s) => s.path === "/mcp").every((s) => s.authorization === `Bearer ${second}`),
    `every request of the call carried the new token: ${JSON.stringify(sent)}`,
  );
  assert(sent.some((s) => s.path === "/token"), "the refresh went to the token endpoint");
});
