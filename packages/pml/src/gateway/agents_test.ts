/**
 * What real agents run into (issue: real agents): elicitation answers that are not decisions,
 * names that were not listed, denied names, error prefixes. Through an SDK client over InMemoryTransport.
 */
import { join } from "node:path";
import { Client } from "../sdk/client.ts";
import { InMemoryTransport } from "../sdk/in_memory.ts";
import {
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  UrlElicitationRequiredError,
} from "../sdk/types.ts";
import { answerError } from "../targets/call_errors.ts";
import { createAuditLog } from "../audit/audit.ts";
import { Approvals } from "../permission/approvals.ts";
import { PermissionStore } from "../permission/permission_store.ts";
import { createRoutingResolver } from "../routing/routing.ts";
import { createGateway } from "./create_gateway.ts";
import { Gateway } from "./gateway.ts";
import type { Target } from "../targets/target.ts";
import { createMcpServer } from "./mcp_server.ts";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../testing/assert.ts";
import { type TempWorkspace, tempWorkspace, testConfig, textOf } from "../testing/workspace.ts";

const PERMS = {
  approvals: "agent",
  permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: ["shell"] },
};

type Answer = () => unknown;

/** A client whose elicitation handler runs `answer` (which may throw or return any shape). */
async function clientWith(gateway: Gateway, answer?: Answer, now?: () => number) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  // A short bound for the "never answers" case; every other answer comes at once.
  const server = createMcpServer(gateway, { elicitationTimeoutMs: 200, now });
  await server.connect(serverSide);
  const client = new Client(
    { name: "agent", version: "1" },
    { capabilities: answer ? { elicitation: {} } : {} },
  );
  // deno-lint-ignore no-explicit-any
  if (answer) client.setRequestHandler(ElicitRequestSchema, () => answer() as any);
  await client.connect(clientSide);
  return Object.assign(client, {
    async [Symbol.asyncDispose]() {
      await client.close();
      await server.close();
    },
  });
}

function auditLines(dir: string): Record<string, unknown>[] {
  try {
    return Deno.readTextFileSync(join(dir, ".pml/audit.log")).trim().split("\n").map((l) =>
      JSON.parse(l)
    );
  } catch {
    return [];
  }
}

const structured = (r: unknown) =>
  (r as { structuredContent?: Record<string, unknown> }).structuredContent ?? {};

for (
  const [how, answer, recorded] of [
    ["cancel", () => ({ action: "cancel" }), "cancel"],
    ["an error", () => {
      throw new Error("Elicitation request received in print mode");
    }, "error"],
    ["accept without a decision", () => ({ action: "accept", content: {} }), "error"],
    ["no answer at all (a headless client)", () => new Promise(() => {}), "timeout"],
  ] as [string, Answer, string][]
) {
  Deno.test(`elicitation answered with ${how}: approval_required, nothing written, not audited as the user's no`, async () => {
    await using ws = tempWorkspace(PERMS);
    const gateway = createGateway(testConfig(ws), { prewarm: false });
    await using _closing = { [Symbol.asyncDispose]: () => gateway.close() };
    await using client = await clientWith(gateway, answer);
    const r = await client.callTool({
      name: "filesystem__write_file",
      arguments: { path: "out.txt", content: "hi" },
    });
    assert(!r.isError, textOf(r));
    const body = structured(r);
    assertEquals(body.status, "approval_required");
    assertEquals(body.approval_type, "tool_permission");
    assert(!(await Deno.stat(join(ws.dir, "out.txt")).catch(() => false)), "nothing was written");
    const lines = auditLines(ws.dir);
    assert(!lines.some((l) => l.by === "user"), JSON.stringify(lines));
    assert(
      lines.some((l) =>
        l.event === "elicitation_unanswered" && l.fallback === "approval_required" &&
        l.elicitation === recorded
      ),
      JSON.stringify(lines),
    );
    // The agent can then answer it.
    const done = await client.callTool({
      name: "pml__continue",
      arguments: { workflow_id: body.workflow_id, decision: "yes" },
    });
    assert(!done.isError, textOf(done));
    assertEquals(ws.read("out.txt"), "hi");
  });
}

Deno.test("elicitation declined by a person (the clock shows seconds passed): the user's no, audited by user", async () => {
  await using ws = tempWorkspace(PERMS);
  const gateway = createGateway(testConfig(ws), { prewarm: false });
  try {
    let t = 0;
    const slow = () => (t += 3000); // each reading 3 s later: a person read the question
    await using client = await clientWith(gateway, () => ({ action: "decline" }), slow);
    const r = await client.callTool({
      name: "filesystem__write_file",
      arguments: { path: "out.txt", content: "hi" },
    });
    assert(r.isError);
    assertStringIncludes(textOf(r), "the user refused");
    const lines = auditLines(ws.dir);
    assert(lines.some((l) => l.event === "permission_denied" && l.by === "user"));
    assert(
      lines.some((l) =>
        l.event === "approval_decided" && l.by === "user" && l.decision === "no" &&
        l.via === "elicitation"
      ),
      JSON.stringify(lines),
    );
  } finally {
    await gateway.close();
  }
});

Deno.test("elicitation declined at once (Codex's bypass flag): still a no, but the result and the audit say the client declined, in how many ms, and that nobody was asked", async () => {
  await using ws = tempWorkspace(PERMS);
  const gateway = createGateway(testConfig(ws), { prewarm: false });
  try {
    let t = 0;
    const fast = () => (t += 7); // 7 ms between asking and the answer
    await using client = await clientWith(gateway, () => ({ action: "decline" }), fast);
    const r = await client.callTool({
      name: "filesystem__write_file",
      arguments: { path: "out.txt", content: "hi" },
    });
    assert(r.isError);
    assert(!textOf(r).includes("the user refused"), textOf(r));
    assertStringIncludes(textOf(r), "the client declined the question in 7 ms");
    assertStringIncludes(textOf(r), "nobody was asked");
    assert(!(await Deno.stat(join(ws.dir, "out.txt")).catch(() => false)), "nothing was written");
    const lines = auditLines(ws.dir);
    assert(!lines.some((l) => l.by === "user"), JSON.stringify(lines));
    assert(
      lines.some((l) =>
        l.event === "permission_denied" && l.by === "client" && l.declined_in_ms === 7
      ),
      JSON.stringify(lines),
    );
    assert(
      lines.some((l) =>
        l.event === "approval_decided" && l.by === "client" && l.decision === "no" &&
        l.declined_in_ms === 7
      ),
      JSON.stringify(lines),
    );
  } finally {
    await gateway.close();
  }
});

Deno.test("pml:continue with no: refused by the agent, audited as such", async () => {
  await using ws = tempWorkspace(PERMS);
  const gateway = createGateway(testConfig(ws), { prewarm: false });
  try {
    await using client = await clientWith(gateway);
    const r = await client.callTool({
      name: "filesystem__write_file",
      arguments: { path: "out.txt", content: "hi" },
    });
    const no = await client.callTool({
      name: "pml__continue",
      arguments: { workflow_id: structured(r).workflow_id, decision: "no" },
    });
    assert(no.isError);
    assertStringIncludes(textOf(no), "pml:continue");
    assert(auditLines(ws.dir).some((l) => l.event === "permission_denied" && l.by === "agent"));
  } finally {
    await gateway.close();
  }
});

Deno.test("names: an unlisted tool's exposed name meets its permission; a denied one says denied; unknown is one clear error", async () => {
  await using ws = tempWorkspace(PERMS);
  const gateway = createGateway(testConfig(ws), { prewarm: false });
  try {
    await using client = await clientWith(gateway);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert(!names.includes("memory__read_graph"), "not named by the permissions");
    assert(!names.includes("shell__exec"), "denied: not listed");
    // Unmatched → ask, by exposed name as by tool id (a stdio dependency of the catalogue).
    for (const name of ["memory__read_graph", "memory:read_graph"]) {
      const r = await client.callTool({ name, arguments: {} });
      assertEquals(structured(r).status, "approval_required", name);
      assertEquals((structured(r).context as { tool: string }).tool, "memory:read_graph");
    }
    for (const name of ["shell__exec", "shell:exec"]) {
      const r = await client.callTool({ name, arguments: { command: "ls" } });
      assert(r.isError, name);
      assertStringIncludes(textOf(r), "denied by .pml.json");
    }
    for (const name of ["nosuch__tool", "filesystem__nosuch", "memory__nosuch"]) {
      const err = await assertRejects(() => client.callTool({ name, arguments: {} }));
      const message = (err as Error).message;
      assertStringIncludes(message, `Unknown tool "${name}"`);
      assertEquals(message.match(/MCP error -32602/g)?.length, 1, message);
    }
    assertEquals(gateway.pendingApprovals, 2, "only the two memory calls were asked");
  } finally {
    await gateway.close();
  }
});

Deno.test("no API key: a server tool says the key is missing, before any question; denied stays denied", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: [], ask: ["json"], deny: ["math"] },
  });
  const gateway = createGateway(testConfig(ws), { prewarm: false });
  try {
    await using client = await clientWith(gateway);
    for (const name of ["json__parse", "json:parse", "text__count"]) {
      const r = await client.callTool({ name, arguments: { text: "{}" } });
      assert(r.isError, name);
      assertEquals(structured(r).code, "CLOUD_API_KEY_REQUIRED", name);
      assertStringIncludes(textOf(r), "Cloud mode requires PML_API_KEY");
    }
    const denied = await client.callTool({ name: "math__sum", arguments: { numbers: [1] } });
    assertStringIncludes(textOf(denied), "denied by .pml.json");
    assertEquals(gateway.pendingApprovals, 0, "nothing was asked");
  } finally {
    await gateway.close();
  }
});

/**
 * A gateway where the meta tool `pml:search` (as the cloud's client) and every call of
 * `upstream:*` (a target's) throw what `fail` throws.
 */
function gatewayThrowing(ws: TempWorkspace, fail: () => never): Gateway {
  const target: Target = {
    name: "throwing",
    listTools: () => Promise.resolve([]),
    provides: (toolId) => Promise.resolve(toolId.startsWith("upstream:")),
    call: () => Promise.resolve().then(fail),
    close: () => Promise.resolve(),
  };
  return new Gateway({
    permissions: new PermissionStore(testConfig(ws).permissions, join(ws.dir, ".pml.json")),
    approvals: new Approvals(),
    routing: createRoutingResolver(),
    targets: [target],
    audit: createAuditLog(ws.dir),
    metaTools: [{
      id: "pml:search",
      description: "throws what the cloud's client throws",
      inputSchema: { type: "object" },
      run: fail,
    }],
  });
}

Deno.test("an MCP error from further away (a meta tool, the cloud's client) reaches the client with one prefix", async () => {
  await using ws = tempWorkspace(PERMS);
  const gateway = gatewayThrowing(ws, () => {
    throw new McpError(ErrorCode.InvalidParams, "Invalid arguments for tool pml:search");
  });
  await using client = await clientWith(gateway);
  const err = await assertRejects(() => client.callTool({ name: "pml__search", arguments: {} }));
  const message = (err as Error).message;
  assertEquals(message, "MCP error -32602: Invalid arguments for tool pml:search");
  assertEquals((err as McpError).code, ErrorCode.InvalidParams);
});

const signIn = {
  mode: "url" as const,
  elicitationId: "e1",
  url: "https://example.com/sign-in",
  message: "Sign in first",
};

/** Throws a -32042 asking to open {@link signIn}, as the SDK's client throws it. */
function signInRequired(): never {
  // The SDK's Server sent its error's message, prefix included; the client prefixed it again
  // (call_errors.ts `answerError`, as the SDK's Client.request: call_post_test.ts).
  throw answerError({
    code: ErrorCode.UrlElicitationRequired,
    message: new UrlElicitationRequiredError([signIn]).message,
    data: { elicitations: [signIn] },
  });
}

Deno.test("a -32042 from further away reaches the client as the SDK's UrlElicitationRequiredError, its elicitations kept, with one prefix", async () => {
  await using ws = tempWorkspace(PERMS);
  const gateway = gatewayThrowing(ws, signInRequired);
  await using client = await clientWith(gateway);
  const err = await assertRejects(() => client.callTool({ name: "pml__search", arguments: {} }));
  assert(err instanceof UrlElicitationRequiredError, String(err));
  assertEquals(err.elicitations, [signIn]);
  assertEquals(err.code, ErrorCode.UrlElicitationRequired);
  assertEquals(err.message, "MCP error -32042: URL elicitation required");
});

Deno.test("a -32042 a target throws (a cloud http tool, a stdio dependency) reaches the client as UrlElicitationRequiredError, allowed or continued after approval", async () => {
  await using ws = tempWorkspace({
    approvals: "agent",
    permissions: { allow: ["upstream:echo"], ask: ["upstream:ask"], deny: [] },
  });
  const gateway = gatewayThrowing(ws, signInRequired);
  await using client = await clientWith(gateway);
  const allowed = await assertRejects(() =>
    client.callTool({ name: "upstream__echo", arguments: {} })
  );
  assert(allowed instanceof UrlElicitationRequiredError, String(allowed));
  assertEquals(allowed.elicitations, [signIn]);
  assertEquals(allowed.message, "MCP error -32042: URL elicitation required");

  const asked = await client.callTool({ name: "upstream__ask", arguments: {} });
  const workflowId = structured(asked).workflow_id;
  assert(typeof workflowId === "string", JSON.stringify(asked));
  const continued = await assertRejects(() =>
    client.callTool({
      name: "pml__continue",
      arguments: { workflow_id: workflowId, decision: "yes" },
    })
  );
  assert(continued instanceof UrlElicitationRequiredError, String(continued));
  assertEquals(continued.elicitations, [signIn]);
});

Deno.test("any other error a target throws stays an isError result naming the tool", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["upstream"], ask: [], deny: [] } });
  const gateway = gatewayThrowing(ws, () => {
    throw answerError({ code: ErrorCode.InvalidParams, message: "MCP error -32602: bad" });
  });
  await using client = await clientWith(gateway);
  const failed = await client.callTool({ name: "upstream__echo", arguments: {} });
  assert(failed.isError);
  assertStringIncludes(textOf(failed), '"upstream:echo" failed: MCP error -32602');
});
