/**
 * The surface beyond tools through the gateway's MCP face (an SDK client over InMemoryTransport),
 * against the real server-everything over Streamable HTTP as a remote `private_mcps` server:
 * resources, templates, reads, prompts, prompt get, completions, the log level, tool definitions
 * whole, and the rules on reads (ids, deny, ask, audit).
 */
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../testing/assert.ts";
import { gatewayFor, tempWorkspace } from "../testing/workspace.ts";
import { startEverything } from "../../../server/tests/upstream.ts";
import { pathToFileURL } from "node:url";
import { Client } from "../sdk/client.ts";
import { InMemoryTransport } from "../sdk/in_memory.ts";
import {
  type CreateMessageRequest,
  CreateMessageRequestSchema,
  type CreateMessageResult,
  type ElicitRequest,
  ElicitRequestSchema,
  type ElicitResult,
  type LoggingMessageNotification,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "../sdk/types.ts";
import { createGateway } from "./create_gateway.ts";
import { createMcpServer } from "./mcp_server.ts";
import { testConfig } from "../testing/workspace.ts";
import { elicitationLabel } from "../targets/upstream/server_requests.ts";
import { Surface } from "./surface.ts";
import type { Target } from "../targets/target.ts";
import type { UpstreamSession } from "../targets/upstream/upstream_session.ts";
import type { PermissionStore } from "../permission/permission_store.ts";
import type { Approvals } from "../permission/approvals.ts";

function workspace(url: string, permissions: { allow: string[]; ask: string[]; deny: string[] }) {
  return tempWorkspace({
    approvals: "agent",
    permissions,
    private_mcps: { everything: { type: "http", proxyTo: url } },
  });
}

Deno.test("surface: resources, templates, read, prompts, get, completions, setLevel of a remote server-everything", async () => {
  const everything = await startEverything();
  try {
    await using ws = workspace(everything.url, {
      allow: ["everything"],
      ask: [],
      deny: [],
    });
    await using g = await gatewayFor(ws);
    const caps = g.client.getServerCapabilities();
    assert(caps?.resources?.subscribe && caps.prompts && caps.completions && caps.logging);

    const { resources } = await g.client.listResources();
    assert(resources.length > 0, "resources listed");
    assert(
      resources.every((r) => r.uri.includes("://everything/")),
      resources.map((r) => r.uri).join(", "),
    );
    const { resourceTemplates } = await g.client.listResourceTemplates();
    assert(
      resourceTemplates.some((t) =>
        t.uriTemplate.startsWith("demo://everything/resource/dynamic/text/")
      ),
      resourceTemplates.map((t) => t.uriTemplate).join(", "),
    );

    const read = await g.client.readResource({
      uri: "demo://everything/resource/dynamic/text/1",
    });
    assertEquals(read.contents[0].uri, "demo://everything/resource/dynamic/text/1");
    assertStringIncludes(String((read.contents[0] as { text?: string }).text), "1");
    // Audited beside the answer, not before it.
    const audited = () => {
      try {
        return ws.read(".pml/audit.log").includes('"resource_read"');
      } catch {
        return false;
      }
    };
    await waitFor(audited, "the read's audit line");

    const { prompts } = await g.client.listPrompts();
    const names = prompts.map((p) => p.name);
    assert(names.includes("everything__simple-prompt"), names.join(", "));
    const got = await g.client.getPrompt({
      name: "everything__args-prompt",
      arguments: { city: "Lyon" },
    });
    assertStringIncludes(JSON.stringify(got.messages), "Lyon");

    const done = await g.client.complete({
      ref: { type: "ref/prompt", name: "everything__completable-prompt" },
      argument: { name: "department", value: "E" },
    });
    assert(done.completion.values.includes("Engineering"), done.completion.values.join(", "));

    await g.client.setLoggingLevel("error");

    // Definitions whole: the structured tool keeps its output schema and its result carries it.
    const { tools } = await g.client.listTools();
    const structured = tools.find((t) => t.name === "everything__get-structured-content");
    assert(structured?.outputSchema, "outputSchema kept");
    const r = await g.client.callTool({
      name: "everything__get-structured-content",
      arguments: { location: "New York" },
    });
    assert(r.structuredContent, "structuredContent kept");

    // A resource link in a tool result reads back through PML.
    const links = await g.client.callTool({
      name: "everything__get-resource-links",
      arguments: { count: 1 },
    });
    const link = (links.content as { type: string; uri?: string }[]).find((c) =>
      c.type === "resource_link"
    );
    assert(link?.uri?.includes("://everything/"), JSON.stringify(links.content));
    const again = await g.client.readResource({ uri: link!.uri! });
    assertEquals(again.contents[0].uri, link!.uri);
  } finally {
    await everything.close();
  }
});

Deno.test("surface rules: a denied server's resources are neither listed nor read; an asked read without elicitation says how to allow it", async () => {
  const everything = await startEverything();
  try {
    {
      await using ws = workspace(everything.url, {
        allow: ["everything"],
        ask: [],
        deny: ["everything:resource"],
      });
      await using g = await gatewayFor(ws);
      assertEquals((await g.client.listResources()).resources, []);
      const err = await assertRejects(() =>
        g.client.readResource({ uri: "demo://everything/resource/dynamic/text/1" })
      );
      assertStringIncludes(String(err), "denied by .pml.json");
      assertStringIncludes(ws.read(".pml/audit.log"), '"permission_denied"');
      // Prompts are another id: still there.
      assert((await g.client.listPrompts()).prompts.length > 0);
    }
    {
      await using ws = workspace(everything.url, {
        allow: ["everything:echo"],
        ask: ["everything:resource"],
        deny: [],
      });
      await using g = await gatewayFor(ws);
      const err = await assertRejects(() =>
        g.client.readResource({ uri: "demo://everything/resource/dynamic/text/1" })
      );
      assertStringIncludes(String(err), 'add "everything:resource" to permissions.allow');
      // Another server's name in a URI is not a server of this workspace.
      const other = await assertRejects(() =>
        g.client.readResource({ uri: "demo://nobody/resource/dynamic/text/1" })
      );
      assertStringIncludes(String(other), "Unknown resource");
    }
    {
      await using ws = workspace(everything.url, {
        allow: ["everything:echo"],
        ask: ["everything:resource"],
        deny: [],
      });
      await using g = await gatewayFor(ws, { elicit: () => "yes" });
      const read = await g.client.readResource({
        uri: "demo://everything/resource/dynamic/text/2",
      });
      assertEquals(read.contents[0].uri, "demo://everything/resource/dynamic/text/2");
    }
  } finally {
    await everything.close();
  }
});

/** A client with its own handlers of the server's requests, on a gateway for `ws`. */
async function ownClient(ws: ReturnType<typeof workspace>, handlers: {
  elicit?: (params: ElicitRequest["params"]) => ElicitResult;
  sample?: (params: CreateMessageRequest["params"]) => CreateMessageResult;
}) {
  const gateway = createGateway(testConfig(ws), { prewarm: false });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = createMcpServer(gateway);
  await server.connect(serverSide);
  const client = new Client({ name: "test", version: "1" }, {
    capabilities: {
      ...(handlers.elicit ? { elicitation: { form: {} } } : {}),
      ...(handlers.sample ? { sampling: {} } : {}),
    },
  });
  const logs: LoggingMessageNotification["params"][] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
  if (handlers.elicit) {
    const elicit = handlers.elicit;
    client.setRequestHandler(ElicitRequestSchema, (r) => elicit(r.params));
  }
  if (handlers.sample) {
    const sample = handlers.sample;
    client.setRequestHandler(CreateMessageRequestSchema, (r) => sample(r.params));
  }
  await client.connect(clientSide);
  return {
    client,
    logs,
    async [Symbol.asyncDispose]() {
      await client.close();
      await server.close();
      await gateway.close();
    },
  };
}

Deno.test("surface during a call: progress, log lines labelled, the server's elicitation labelled as its own, sampling under sampling:<mcp>, roots = the workspace", async () => {
  const everything = await startEverything();
  try {
    await using ws = workspace(everything.url, {
      allow: ["everything", "sampling:everything"],
      ask: [],
      deny: [],
    });
    const asked: string[] = [];
    await using c = await ownClient(ws, {
      elicit: (params) => {
        asked.push(params.message);
        return { action: "accept", content: { name: "Ada" } };
      },
      sample: () => ({
        role: "assistant",
        content: { type: "text", text: "sampled answer" },
        model: "test",
      }),
    });
    const client = c.client;

    const progress: number[] = [];
    await client.callTool(
      {
        name: "everything__trigger-long-running-operation",
        arguments: { duration: 0.3, steps: 3 },
      },
      undefined,
      { onprogress: (p) => void progress.push(p.progress) },
    );
    assertEquals(progress.length, 3);

    await client.setLoggingLevel("debug");
    await client.callTool({ name: "everything__toggle-simulated-logging", arguments: {} });
    await waitFor(() => c.logs.length > 0, "a log line of everything");
    assert(c.logs.every((l) => l.logger?.startsWith("everything")), JSON.stringify(c.logs));
    await client.callTool({ name: "everything__toggle-simulated-logging", arguments: {} });

    const elicited = await client.callTool({
      name: "everything__trigger-elicitation-request",
      arguments: {},
    });
    assertEquals(asked.length, 1);
    assert(asked[0].startsWith(elicitationLabel("everything")), asked[0]);
    assertStringIncludes(JSON.stringify(elicited.content), "Ada");

    const sampled = await client.callTool({
      name: "everything__trigger-sampling-request",
      arguments: { prompt: "hello", maxTokens: 10 },
    });
    assertStringIncludes(JSON.stringify(sampled.content), "sampled answer");

    const roots = await client.callTool({ name: "everything__get-roots-list", arguments: {} });
    assertStringIncludes(JSON.stringify(roots.content), pathToFileURL(ws.dir).href);
  } finally {
    await everything.close();
  }
});

/** Waits until `cond` holds (polled; fails after 20 s, which no honest run comes near). */
async function waitFor(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
  assert(cond(), `never happened: ${what}`);
}

Deno.test("surface: a subscription to a resource of a remote server-everything; its updates reach the client under the PML URI", async () => {
  const everything = await startEverything();
  try {
    await using ws = workspace(everything.url, { allow: ["everything"], ask: [], deny: [] });
    await using g = await gatewayFor(ws);
    const updated: string[] = [];
    g.client.setNotificationHandler(
      ResourceUpdatedNotificationSchema,
      (n) => void updated.push(n.params.uri),
    );
    const uri = "demo://everything/resource/dynamic/text/3";
    await g.client.subscribeResource({ uri });
    await g.client.callTool({ name: "everything__toggle-subscriber-updates", arguments: {} });
    await waitFor(() => updated.length > 0, "an update of the subscribed resource");
    assertEquals(updated[0], uri);
    await g.client.callTool({ name: "everything__toggle-subscriber-updates", arguments: {} });
    await g.client.unsubscribeResource({ uri });
  } finally {
    await everything.close();
  }
});

Deno.test("surface: a server that never answers is left out of a list after the bound; the others are listed", async () => {
  const quick = {
    capabilities: { resources: {} },
    listResources: () => Promise.resolve([{ uri: "a://quick/x", name: "x" }]),
  } as unknown as UpstreamSession;
  const target = {
    name: "fake",
    upstreams: {
      origin: "remote",
      servers: () => Promise.resolve(["silent", "quick"]),
      session: (server: string) =>
        server === "quick" ? Promise.resolve(quick) : new Promise<never>(() => {}),
    },
  } as unknown as Target;
  const surface = new Surface({
    targets: [target],
    permissions: { check: () => "allow" } as unknown as PermissionStore,
    approvals: {} as Approvals,
    audit: { write: () => Promise.resolve() },
    namespaces: () => undefined,
    listBoundMs: 50,
  });
  assertEquals(await surface.listResources(), [{ uri: "a://quick/x", name: "x" }]);
});
