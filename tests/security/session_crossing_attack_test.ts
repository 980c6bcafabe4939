/**
 * Attack: one stdio server brought behind `pml serve` (server-everything, `pml import`) is shared
 * by every MCP session of the workspace, and over stdio nothing links the server's question to the
 * call it belongs to. Session A runs a long call; session B's call makes the server ask its user
 * something. PML used to relay the question to the oldest call in flight, A's: A's user (or A's
 * agent) saw and answered B's question. Now, with calls of two sessions in flight, the question is
 * refused (the server's request gets an error that says why) and A never sees it; beside it, the
 * ordinary work: once A's call ended, B's question reaches B (docs/surface.md, "During a call").
 */
import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import { ElicitRequestSchema } from "../../packages/pml/src/sdk/types.ts";
import { runPml } from "../e2e/_spawn.ts";
import { spawnServe } from "../e2e/_serve.ts";
import { elicitationLabel } from "../../packages/pml/src/targets/upstream/server_requests.ts";

const PACKAGE = "@modelcontextprotocol/server-everything@2026.8.31";

/** npm's own cache: the test's HOME is private (as in import_test.ts). */
const NPM_CACHE = new TextDecoder().decode(
  new Deno.Command("npm", { args: ["config", "get", "cache"], stdout: "piped" }).outputSync()
    .stdout,
).trim();

/** A client of `url` that elicits: each question it is asked is recorded and declined. */
async function session(url: string, asked: string[]): Promise<Client> {
  const client = new Client({ name: "crossing", version: "1" }, {
    capabilities: { elicitation: { form: {} } },
  });
  client.setRequestHandler(ElicitRequestSchema, (r) => {
    asked.push(r.params.message);
    return { action: "decline" };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const textOf = (r: Record<string, unknown>) => JSON.stringify(r.content);

Deno.test("attack: a shared stdio server's question during session B's call is never shown to session A of pml serve; once A's call ended, B is asked", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: ["everything"], ask: [], deny: [] },
  });
  ws.write(
    ".mcp.json",
    JSON.stringify({
      mcpServers: { everything: { type: "stdio", command: "npx", args: ["-y", PACKAGE] } },
    }),
  );
  const env = { npm_config_cache: NPM_CACHE };
  const imported = await runPml(ws, ["import", "--from", "claude", "--yes"], env);
  assertEquals(imported.code, 0, imported.text);
  await using serve = await spawnServe(ws, env);

  const askedA: string[] = [];
  const askedB: string[] = [];
  const a = await session(serve.url, askedA);
  const b = await session(serve.url, askedB);
  try {
    // A's long call, in flight once its first progress arrived.
    const running = new AbortController();
    const progressed = Promise.withResolvers<void>();
    const long = a.callTool(
      {
        name: "everything__trigger-long-running-operation",
        arguments: { duration: 120, steps: 120 },
      },
      undefined,
      {
        signal: running.signal,
        timeout: 300_000,
        onprogress: () => progressed.resolve(),
      },
    );
    long.catch(() => {/* asserted below; a failed assertion first must not hide behind it */});
    await progressed.promise;

    const refused = await b.callTool({
      name: "everything__trigger-elicitation-request",
      arguments: {},
    });
    assertStringIncludes(textOf(refused), "is not relayed: calls of several MCP sessions");
    assertEquals(askedA, [], "A never saw B's question");
    assertEquals(askedB, [], "nor was it shown to B, whose call could not be told from A's");

    // A's call ends: B's question reaches B, labelled as the server's (asked again until PML has
    // taken A's cancellation, which the client does not wait for).
    running.abort("done");
    await assertRejects(() => long);
    let asked = "";
    for (let i = 0; i < 50 && !askedB.length; i++) {
      if (i) await new Promise((r) => setTimeout(r, 100));
      asked = textOf(
        await b.callTool({ name: "everything__trigger-elicitation-request", arguments: {} }),
      );
    }
    assertStringIncludes(asked, "declined");
    assertEquals(askedB.length, 1);
    const question: string = askedB[0];
    assert(question.startsWith(elicitationLabel("everything")), question);
    assertEquals(askedA, []);
  } finally {
    await b.close();
    await a.close();
  }
});
