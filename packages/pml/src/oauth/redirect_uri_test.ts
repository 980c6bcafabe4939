/**
 * A client registered beforehand with a fixed redirect URI (`oauth.redirectUri`): PML serves that
 * exact loopback URI for the sign-in, and refuses one that is not `http` on loopback with a port.
 * Against the OAuth-protected fixture (the SDK's server auth).
 */
import { assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { gatewayFor, humanLines, tempWorkspace, textOf } from "../testing/workspace.ts";
import { lastLink, openLink, startOAuthServer } from "../../../../tests/e2e/_oauth.ts";

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

Deno.test("oauth: a registered redirect URI is the one served and sent; one off loopback is refused", async () => {
  await using server = await startOAuthServer();
  const redirectUri = `http://127.0.0.1:${freePort()}/pml-callback`;
  for (const [uri, ok] of [[redirectUri, true], ["https://app.example/cb", false]] as const) {
    await using ws = tempWorkspace({
      permissions: { allow: ["secure"], ask: [], deny: [] },
      private_mcps: {
        secure: { type: "http", proxyTo: server.url(), oauth: { redirectUri: uri } },
      },
    });
    const human = humanLines();
    await using g = await gatewayFor(ws, { tell: human.tell });
    const first = await g.client.callTool({ name: "secure__whoami", arguments: {} });
    const body = first.structuredContent as {
      status?: string;
      workflow_id?: string;
      code?: string;
    };
    if (!ok) {
      assertEquals(body.code, "CONFIG_INVALID", textOf(first));
      assertStringIncludes(textOf(first), "must be an http URI on loopback with a port");
      continue;
    }
    assertEquals(body.status, "waiting_for_human", textOf(first));
    const link = new URL(lastLink(human.lines.join("\n"))!);
    assertEquals(link.searchParams.get("redirect_uri"), redirectUri);
    assertEquals((await openLink(link.href)).status, 200);
    const done = await g.client.callTool({
      name: "pml__continue",
      arguments: { workflow_id: body.workflow_id, decision: "yes" },
    });
    assertStringIncludes(textOf(done), "mcp:tools");
  }
});
