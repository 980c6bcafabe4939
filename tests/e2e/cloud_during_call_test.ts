/**
 * End to end, what a registry http MCP proxied by the PML cloud sends during a tool call reaches
 * the agent (docs/cloud.md, "During a call"): the real `pml-server` app (`_cloud.ts`) with
 * server-everything (Streamable HTTP) as the http entries `open` (no key) and `upstream` (the BYOK
 * key `UPSTREAM_TOKEN`). One SDK client calls its progress, elicitation, sampling and logging tools
 * direct, then through a spawned `pml stdio` and `pml serve`: it sees the same progress, the same
 * question (labelled as the server's), its sampling answer back in the result, and the server's log
 * lines.
 */
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import type { Transport } from "../../packages/pml/src/sdk/transport.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import {
  CancelledNotificationSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  type LoggingMessageNotification,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
} from "../../packages/pml/src/sdk/types.ts";
import { elicitationLabel } from "../../packages/pml/src/targets/upstream/server_requests.ts";
import { startCloud, startUpstream } from "./_cloud.ts";
import { LEAKY_TOOLS, startLeakyUpstream } from "../security/_leaky_upstream.ts";
import { StdioClientTransport } from "../../packages/pml/src/sdk/stdio_client.ts";
import { PML_BIN, pmlEnv } from "./_spawn.ts";
import { spawnServe } from "./_serve.ts";

const TOKEN = "tok-during-call-456";
export const DURING_CALL_TOOLS = [
  "trigger-long-running-operation",
  "trigger-elicitation-request",
  "trigger-sampling-request",
  "toggle-simulated-logging",
  "toggle-subscriber-updates",
  "trigger-url-elicitation",
];

/** A client that samples and elicits, and what it saw of the server. */
export function probeClient() {
  const client = new Client({ name: "e2e", version: "1" }, {
    capabilities: { sampling: {}, elicitation: { form: {}, url: {} } },
  });
  const seen = {
    logs: [] as LoggingMessageNotification["params"][],
    questions: [] as string[],
    urls: [] as string[],
    prompts: [] as string[],
  };
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    seen.logs.push(n.params);
  });
  client.setRequestHandler(ElicitRequestSchema, (r) => {
    seen.questions.push(r.params.message);
    if (r.params.mode === "url") {
      seen.urls.push(r.params.url);
      return { action: "accept" };
    }
    return { action: "accept", content: { name: "Probe Person", check: true } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, (r) => {
    seen.prompts.push(JSON.stringify(r.params.messages));
    return {
      role: "assistant",
      content: { type: "text", text: "probe-sampled" },
      model: "probe",
    };
  });
  return { client, seen };
}

/** What the client sees of the server's messages during its calls (`prefix`: PML's name). */
async function duringCalls(transport: Transport, prefix = "") {
  const { client, seen } = probeClient();
  await client.connect(transport);
  try {
    const text = (r: unknown) => JSON.stringify((r as { content: unknown }).content);
    const progress: unknown[] = [];
    const long = await client.callTool(
      { name: `${prefix}trigger-long-running-operation`, arguments: { duration: 0.6, steps: 3 } },
      undefined,
      { onprogress: (p) => void progress.push(p) },
    );
    const elicited = await client.callTool({
      name: `${prefix}trigger-elicitation-request`,
      arguments: {},
    });
    const sampled = await client.callTool({
      name: `${prefix}trigger-sampling-request`,
      arguments: { prompt: "say hi", maxTokens: 5 },
    });
    const signIn = await client.callTool({
      name: `${prefix}trigger-url-elicitation`,
      arguments: { url: "https://example.com/sign-in", message: "Open it", elicitationId: "e1" },
    });
    return {
      progress,
      long: text(long),
      elicited: text(elicited).includes("Probe Person"),
      signIn: text(signIn),
      urls: seen.urls,
      questions: seen.questions,
      sampled: text(sampled).includes("probe-sampled"),
      prompts: seen.prompts,
    };
  } finally {
    await client.close();
  }
}

Deno.test("e2e cloud during a call: a registry http MCP's progress, elicitation (form and URL mode) and sampling through pml stdio and pml serve, as direct", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url, undefined, { tools: DURING_CALL_TOOLS });
  await using ws = tempWorkspace({
    permissions: {
      allow: ["open", "upstream", "sampling:open", "sampling:upstream"],
      ask: [],
      deny: [],
    },
    env: ["UPSTREAM_TOKEN"],
  });
  const env = { ...cloud.env, UPSTREAM_TOKEN: TOKEN };
  const direct = await duringCalls(
    new StreamableHTTPClientTransport(new URL(`${upstream.url}/o/mcp`)),
  );
  assertEquals(direct.progress.length, 3, "the probe itself works");
  assert(direct.elicited && direct.sampled, JSON.stringify(direct));
  assertEquals(direct.urls, ["https://example.com/sign-in"], "a URL-mode question too");
  // The SDK's client runs a progress notification's handler a microtask later and drops it when
  // the answer came in the same read: the last step may be missing wherever the two travel close
  // (direct over stdio too). Every step that arrives is the server's, in order.
  const labelled = (server: string, through: Awaited<ReturnType<typeof duringCalls>>) => {
    assert(through.progress.length >= 2, JSON.stringify(through.progress));
    return {
      ...direct,
      progress: direct.progress.slice(0, through.progress.length),
      questions: direct.questions.map((q) => elicitationLabel(server) + q),
    };
  };

  for (const server of ["open", "upstream"]) {
    const stdio = await duringCalls(
      new StdioClientTransport({ command: PML_BIN, args: ["stdio"], env: pmlEnv(ws, env) }),
      `${server}__`,
    );
    assertEquals(stdio, labelled(server, stdio), `pml stdio → cloud → ${server}`);
  }
  {
    await using serve = await spawnServe(ws, env);
    for (const server of ["open", "upstream"]) {
      const through = await duringCalls(
        new StreamableHTTPClientTransport(new URL(serve.url)),
        `${server}__`,
      );
      assertEquals(through, labelled(server, through), `pml serve → cloud → ${server}`);
    }
  }
});

/** Waits (at most `ms`) for `done`. */
async function until(done: () => boolean, ms = 9000): Promise<void> {
  for (const end = Date.now() + ms; !done() && Date.now() < end;) {
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * What the client sees of what the server sends outside a request: its simulated log lines, and
 * the updates of a resource it subscribed to (`uri`: the server's URI, or PML's of it).
 */
async function outsideRequests(transport: Transport, prefix: string, uri: string) {
  const client = new Client({ name: "e2e", version: "1" }, { capabilities: {} });
  const logs: LoggingMessageNotification["params"][] = [];
  const updated: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
  client.setNotificationHandler(
    ResourceUpdatedNotificationSchema,
    (n) => void updated.push(n.params.uri),
  );
  await client.connect(transport);
  try {
    const toggle = (name: string) => client.callTool({ name: `${prefix}${name}`, arguments: {} });
    await toggle("toggle-simulated-logging");
    await until(() => logs.length > 0);
    await toggle("toggle-simulated-logging");
    await client.subscribeResource({ uri });
    await toggle("toggle-subscriber-updates");
    await until(() => updated.includes(uri));
    await toggle("toggle-subscriber-updates");
    await client.unsubscribeResource({ uri });
    return {
      logged: logs.length > 0,
      loggers: [...new Set(logs.map((l) => l.logger))],
      updated: updated.includes(uri),
    };
  } finally {
    await client.close();
  }
}

Deno.test("e2e cloud outside a request: a registry http MCP's log lines and the updates of a subscribed resource through pml stdio and pml serve, as direct", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url, undefined, { tools: DURING_CALL_TOOLS });
  await using ws = tempWorkspace({
    permissions: { allow: ["open"], ask: [], deny: [] },
  });
  const env = cloud.env;
  const own = "demo://resource/static/document/architecture.md";
  const pml = "demo://open/resource/static/document/architecture.md";
  const direct = await outsideRequests(
    new StreamableHTTPClientTransport(new URL(`${upstream.url}/o/mcp`)),
    "",
    own,
  );
  assertEquals(direct, { logged: true, loggers: [undefined], updated: true }, "the probe works");
  const through = { logged: true, loggers: ["open"], updated: true };
  assertEquals(
    await outsideRequests(
      new StdioClientTransport({ command: PML_BIN, args: ["stdio"], env: pmlEnv(ws, env) }),
      "open__",
      pml,
    ),
    through,
    "pml stdio → cloud → open",
  );
  await using serve = await spawnServe(ws, env);
  assertEquals(
    await outsideRequests(new StreamableHTTPClientTransport(new URL(serve.url)), "open__", pml),
    through,
    "pml serve → cloud → open",
  );
});

Deno.test("e2e cloud during a call: cancellation both ways, the client's of a call and the server's of its question, through pml stdio", async () => {
  await using upstream = await startUpstream();
  await using leaky = startLeakyUpstream();
  await using cloud = await startCloud(upstream.url, undefined, { tools: DURING_CALL_TOOLS });
  await using cloud2 = await startCloud(leaky.url, { upstream: "/mcp", open: "/mcp" }, {
    tools: LEAKY_TOOLS,
  });
  await using ws = tempWorkspace({ permissions: { allow: ["open"], ask: [], deny: [] } });
  // Another workspace for the other cloud: its `open` is another server (pinned apart).
  await using ws2 = tempWorkspace({ permissions: { allow: ["open"], ask: [], deny: [] } });
  const connect = async (env: Record<string, string>, at = ws) => {
    const client = new Client({ name: "e2e", version: "1" }, {
      capabilities: { elicitation: { form: {} } },
    });
    const withdrawn: string[] = [];
    // Its questions never answered, until the server withdraws one. The SDK client's own handler
    // of notifications/cancelled skips request id 0 (pml's first request to it): this one does not.
    const open = new Map<unknown, () => void>();
    client.setNotificationHandler(CancelledNotificationSchema, (n) => {
      open.get(n.params.requestId)?.();
    });
    client.setRequestHandler(ElicitRequestSchema, (r, extra) =>
      new Promise((resolve) => {
        open.set(extra.requestId, () => {
          withdrawn.push(r.params.message);
          resolve({ action: "cancel" });
        });
      }));
    await client.connect(
      new StdioClientTransport({ command: PML_BIN, args: ["stdio"], env: pmlEnv(at, env) }),
    );
    return Object.assign(client, { withdrawn, [Symbol.asyncDispose]: () => client.close() });
  };

  // The client cancels a long call after its first step: the server is told, under its own id.
  {
    await using client = await connect(cloud.env);
    const stop = new AbortController();
    const call = client.callTool(
      { name: "open__trigger-long-running-operation", arguments: { duration: 20, steps: 20 } },
      undefined,
      { signal: stop.signal, onprogress: () => stop.abort("enough") },
    );
    await call.then(() => assert(false, "the call was not cancelled"), () => {});
    const cancelled = () =>
      upstream.seen.some((s) => s.path === "/o/mcp" && s.rpc === "notifications/cancelled");
    for (let i = 0; i < 100 && !cancelled(); i++) await new Promise((r) => setTimeout(r, 50));
    assert(cancelled(), "the upstream got notifications/cancelled");
  }
  // The server withdraws its question: the client's handler is cancelled, the call ends.
  {
    await using client = await connect(cloud2.env, ws2);
    const r = await client.callTool({ name: "open__retract", arguments: {} });
    assertEquals(JSON.stringify(r.content), JSON.stringify([{ type: "text", text: "withdrawn" }]));
    for (let i = 0; i < 100 && !client.withdrawn.length; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assertEquals(client.withdrawn, [elicitationLabel("open") + "A question withdrawn soon"]);
  }
});

Deno.test("e2e cloud outside a request: logging/setLevel reaches a registry http MCP, whose lines below it then stay away, through pml stdio", async () => {
  await using leaky = startLeakyUpstream();
  await using cloud = await startCloud(leaky.url, { upstream: "/mcp", open: "/mcp" }, {
    tools: LEAKY_TOOLS,
  });
  await using ws = tempWorkspace({ permissions: { allow: ["open"], ask: [], deny: [] } });
  const env = cloud.env;
  const client = new Client({ name: "e2e", version: "1" }, { capabilities: {} });
  const logs: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void logs.push(n.params));
  await client.connect(
    new StdioClientTransport({ command: PML_BIN, args: ["stdio"], env: pmlEnv(ws, env) }),
  );
  try {
    const levels = () => client.callTool({ name: "open__levels", arguments: {} });
    await levels(); // every line: no level set yet
    await until(() => logs.length >= 2);
    await client.setLoggingLevel("error");
    await levels(); // the debug line, sent first on the same stream, is dropped by the server
    await until(() => logs.length >= 3);
    assertEquals(logs, [
      { level: "debug", logger: "open", data: "a debug line" },
      { level: "error", logger: "open", data: "a error line" },
      { level: "error", logger: "open", data: "a error line" },
    ]);
  } finally {
    await client.close();
  }
});
