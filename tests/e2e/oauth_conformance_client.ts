/**
 * The client the conformance suite runs for its `auth/…` scenarios (`tests/e2e/oauth_conformance_test.ts`):
 * `deno run -A tests/e2e/oauth_conformance_client.ts <server URL>`. It puts the scenario's server
 * behind a spawned `pml stdio` as a remote server of `private_mcps` (`conf`), and plays the agent and
 * the human: the agent calls the server's tools; when a call waits for its user to sign in, the
 * human opens the last link `pml` printed on its stderr (the scenario's authorization server answers
 * at once and redirects to `pml`'s loopback page), and the agent calls `pml:continue`.
 * A pre-registered client (`MCP_CONFORMANCE_CONTEXT`: `client_id`, `client_secret`) is given to PML
 * as variables named in `.pml.json`, as a user would. Exits 0 when every call ended with a result.
 */
import type { CallToolResult } from "../../packages/pml/src/sdk/types.ts";
import { tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "./_spawn.ts";
import { lastLink, openLink } from "./_oauth.ts";

/** A client ID metadata document URL, as a client that publishes one names it. */
const CIMD = "https://conformance-test.local/client-metadata.json";
/** The human signs in at most this many times for one call (the step-up included). */
const SIGN_INS = 4;

const url = Deno.args[0];
const context = JSON.parse(Deno.env.get("MCP_CONFORMANCE_CONTEXT") ?? "{}");
const preRegistered = typeof context.client_id === "string";
await using ws = tempWorkspace({
  permissions: { allow: ["conf"], ask: [], deny: [] },
  private_mcps: {
    conf: {
      type: "http",
      proxyTo: url,
      oauth: preRegistered
        ? { clientId: "{CONF_CLIENT_ID}", clientSecret: "{CONF_CLIENT_SECRET}" }
        : { clientMetadataUrl: CIMD },
      envRequired: preRegistered ? ["CONF_CLIENT_ID", "CONF_CLIENT_SECRET"] : [],
    },
  },
});
await using pml = await connectStdio(ws, {
  env: preRegistered
    ? { CONF_CLIENT_ID: context.client_id, CONF_CLIENT_SECRET: context.client_secret ?? "" }
    : {},
});

/** One call, the human signing in each time it waits for them. */
async function callSigningIn(name: string): Promise<CallToolResult> {
  let result = await pml.callTool({ name, arguments: {} }) as CallToolResult;
  for (let i = 0; i < SIGN_INS; i++) {
    const body = result.structuredContent as Record<string, unknown> | undefined;
    if (body?.status !== "waiting_for_human" || body.reason !== "sign_in") return result;
    const link = lastLink(pml.stderr());
    if (!link) throw new Error(`no sign-in link on pml's stderr:\n${pml.stderr()}`);
    const page = await openLink(link);
    console.error(`human: opened the sign-in link, the page answered ${page.status}`);
    result = await pml.callTool({
      name: "pml__continue",
      arguments: { workflow_id: body.workflow_id, decision: "yes" },
    }) as CallToolResult;
  }
  return result;
}

const listed = await pml.listTools();
console.error(`agent: tools ${listed.tools.map((t) => t.name).join(", ")}`);
const result = await callSigningIn("conf__test-tool");
console.error(`agent: ${JSON.stringify(result)}`);
console.error(`pml stderr:\n${pml.stderr()}`);
if (result.isError || textOf(result) !== "test") Deno.exit(1);
