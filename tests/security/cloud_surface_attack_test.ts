/**
 * Attacks on the surface of registry http MCPs proxied by the PML cloud (docs/cloud.md
 * "Resources, prompts and completions", "During a call"): the real `pml-server` app
 * (`tests/e2e/_cloud.ts`) with
 * server-everything as the http entries `open` (no key) and `upstream` (the BYOK key
 * `UPSTREAM_TOKEN`), reached through a spawned `pml stdio` and, for what a client of the cloud
 * could send itself, straight at the cloud's `/mcp`; for what a server sends during a call, a
 * hostile server of its own (`_leaky_upstream.ts`) in place of server-everything.
 */
import { assert, assertEquals, assertRejects } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import { startCloud, startUpstream } from "../e2e/_cloud.ts";
import { connectStdio, PML_BIN, pmlEnv } from "../e2e/_spawn.ts";
import { StdioClientTransport } from "../../packages/pml/src/sdk/stdio_client.ts";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "../../packages/pml/src/sdk/types.ts";
import { elicitationLabel } from "../../packages/pml/src/targets/upstream/server_requests.ts";
import { DEFAULT_NOTIFICATION_BOUND } from "../../packages/pml/src/targets/upstream/upstream_hub.ts";
import { MAX_NOTIFICATIONS } from "../../packages/server/src/mcp/call_stream.ts";
import { LEAKY_TOOLS, startLeakyUpstream } from "./_leaky_upstream.ts";
import { spawnServe } from "../e2e/_serve.ts";

const TOKEN = "tok-attack-surface-987";

function cloudEnv(cloud: { env: Record<string, string> }) {
  return { ...cloud.env, UPSTREAM_TOKEN: TOKEN };
}

Deno.test("attack: a resource URI naming another registry MCP, or one the workspace does not allow, reads nothing of it; denied and asked ids say how to allow", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  // `upstream` is not a server of this workspace: its key is not even listed.
  await using ws = tempWorkspace({
    permissions: { allow: ["open"], ask: ["open:prompt"], deny: [] },
  });
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });

  // The ordinary work still succeeds.
  const listed = (await client.listResources()).resources.map((r) => r.uri);
  assert(listed.includes("demo://open/resource/static/document/architecture.md"), listed.join());
  assert(!listed.some((u) => u.startsWith("demo://upstream/")), "a server not allowed is listed");
  const ok = await client.readResource({ uri: "demo://open/resource/dynamic/text/1" });
  assertEquals(ok.contents[0].uri, "demo://open/resource/dynamic/text/1");

  // A URI or prompt of a server the workspace does not allow (nor lists its key): refused first,
  // naming the `allow` line (not the missing key, which allowing would still need), and the cloud
  // is not asked; one of no server at all is unknown.
  const before = cloud.seen.length;
  const refused = await assertRejects(() =>
    client.readResource({ uri: "demo://upstream/resource/dynamic/text/1" })
  );
  assert(String(refused).includes('add "upstream:resource" to permissions.allow'), String(refused));
  assert(!String(refused).includes("API key"), String(refused));
  const refusedPrompt = await assertRejects(() =>
    client.getPrompt({ name: "upstream__simple-prompt", arguments: {} })
  );
  assert(
    String(refusedPrompt).includes('add "upstream:prompt" to permissions.allow'),
    String(refusedPrompt),
  );
  const unknown = await assertRejects(() =>
    client.readResource({ uri: "demo://nosuch/resource/dynamic/text/1" })
  );
  assert(String(unknown).includes("Unknown resource"), String(unknown));
  assert(!cloud.seen.slice(before).some((s) => s.headers["x-pml-server"] === "upstream"));

  // A URI of `open` that names `upstream` is open's own URI: asked of open, never of upstream.
  const upstreamReads = upstream.seen.filter((s) => s.path === "/u/mcp").length;
  await client.readResource({ uri: "demo://open/upstream/resource/dynamic/text/1" }).catch(
    () => {},
  );
  const relayed = cloud.seen.slice(before).filter((s) => s.rpc === "resources/read");
  assert(relayed.length > 0 && relayed.every((s) => s.headers["x-pml-server"] === "open"));
  assert(relayed.every((s) => s.headers["x-pml-byok"] === undefined), "no key for open");
  assertEquals(upstream.seen.filter((s) => s.path === "/u/mcp").length, upstreamReads);

  // An asked prompt without a client that elicits: refused with how to allow it.
  const asked = await assertRejects(() =>
    client.getPrompt({ name: "open__simple-prompt", arguments: {} })
  );
  assert(String(asked).includes('add "open:prompt" to permissions.allow'), String(asked));
});

Deno.test("attack: a denied registry MCP's resources are neither listed nor read", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace({
    permissions: { allow: ["open", "upstream"], ask: [], deny: ["upstream:resource"] },
    env: ["UPSTREAM_TOKEN"],
  });
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });
  const listed = (await client.listResources()).resources.map((r) => r.uri);
  assert(listed.some((u) => u.startsWith("demo://open/")));
  assert(!listed.some((u) => u.startsWith("demo://upstream/")), listed.join(", "));
  const before = cloud.seen.length;
  const denied = await assertRejects(() =>
    client.readResource({ uri: "demo://upstream/resource/dynamic/text/1" })
  );
  assert(String(denied).includes('"upstream:resource" is denied'), String(denied));
  assertEquals(cloud.seen.slice(before).filter((s) => s.rpc === "resources/read"), []);
  // Its prompts are another id, still allowed.
  const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  assert(prompts.includes("upstream__simple-prompt"), prompts.join(", "));
});

Deno.test("attack: a registry MCP the workspace allows but whose key is missing says so, and sends nothing", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace({
    permissions: { allow: ["open", "upstream"], ask: [], deny: [] },
  });
  const env: Record<string, string> = cloudEnv(cloud);
  delete env.UPSTREAM_TOKEN;
  await using client = await connectStdio(ws, { env });
  const before = cloud.seen.length;
  const noKey = await assertRejects(() =>
    client.readResource({ uri: "demo://upstream/resource/dynamic/text/1" })
  );
  assert(String(noKey).includes('needs your API key "UPSTREAM_TOKEN"'), String(noKey));
  assert(!cloud.seen.slice(before).some((s) => s.headers["x-pml-server"] === "upstream"));
});

/** An SDK client straight at the cloud's relay of `server`, with these extra headers. */
async function atCloud(
  cloud: { url: string; key: string },
  server: string,
  headers: Record<string, string> = {},
): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${cloud.url}/mcp`), {
    requestInit: {
      headers: { authorization: `Bearer ${cloud.key}`, "x-pml-server": server, ...headers },
    },
  });
  const client = new Client({ name: "attacker", version: "1" }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

const byok = (values: Record<string, string>) => btoa(JSON.stringify(values));

Deno.test("attack: straight at the cloud, a server without its key, a namespace that is no http MCP, and a key echoed by the server", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  const upstreamRequests = () => upstream.seen.filter((s) => s.path === "/u/mcp").length;

  // No key: refused before anything is sent to the server that needs it.
  const before = upstreamRequests();
  const noKey = await assertRejects(() => atCloud(cloud, "upstream"));
  assert(String(noKey).includes("API_KEY_REQUIRED"), String(noKey));
  assert(String(noKey).includes("UPSTREAM_TOKEN"), String(noKey));
  assertEquals(upstreamRequests(), before);

  // Another user's key on the same server reaches nothing of it: refused the same way.
  const wrongVar = await assertRejects(() =>
    atCloud(cloud, "upstream", { "x-pml-byok": byok({ OTHER: TOKEN }) })
  );
  assert(String(wrongVar).includes("API_KEY_REQUIRED"), String(wrongVar));

  // A platform namespace (computed by the cloud, no server behind it), and one that does not exist.
  for (const ns of ["json", "nosuch", "../admin"]) {
    const refused = await assertRejects(() => atCloud(cloud, ns));
    assert(String(refused).includes("No HTTP MCP"), String(refused));
  }

  // An answer to a server's request that no request of this key waits for: refused, sent nowhere.
  const forged = await fetch(`${cloud.url}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${cloud.key}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: `pml-server-${crypto.randomUUID()}`,
      result: { action: "accept", content: { decision: "always" } },
    }),
  });
  assertEquals(forged.status, 404);
  assert((await forged.text()).includes("No request of a server waits for this answer"));

  // With the key: the server's answers and errors never carry it back, even when they echo it.
  const client = await atCloud(cloud, "upstream", {
    "x-pml-byok": byok({ UPSTREAM_TOKEN: TOKEN }),
  });
  try {
    assert(client.getServerCapabilities()?.resources !== undefined);
    const echoed = await client.readResource({ uri: `demo://resource/dynamic/text/${TOKEN}` })
      .then((r) => JSON.stringify(r), (e) => String(e));
    assert(!echoed.includes(TOKEN), echoed);
    assert(echoed.includes("[redacted]"), echoed);
    const prompt = await client.getPrompt({
      name: "args-prompt",
      arguments: { city: TOKEN, state: "x" },
    });
    const text = JSON.stringify(prompt);
    assert(!text.includes(TOKEN) && text.includes("[redacted]"), text);
    const atServer = upstream.seen.filter((s) => s.path === "/u/mcp" && s.rpc === "prompts/get");
    assert(atServer.every((s) => s.headers.authorization === `Bearer ${TOKEN}`));
  } finally {
    await client.close();
  }
});

/** A client of a spawned `pml stdio` that elicits (answering `decision`) and samples, if asked. */
async function duringCallClient(
  ws: { dir: string; home: string },
  env: Record<string, string>,
  opts: { elicit: boolean; decision?: string },
) {
  const client = new Client({ name: "agent", version: "1" }, {
    capabilities: { sampling: {}, ...(opts.elicit ? { elicitation: { form: {} } } : {}) },
  });
  const seen = { logs: [] as unknown[], questions: [] as string[], sampled: 0 };
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    seen.logs.push(n.params);
  });
  if (opts.elicit) {
    client.setRequestHandler(ElicitRequestSchema, (r) => {
      seen.questions.push(r.params.message);
      return { action: "accept", content: { decision: opts.decision ?? "yes" } };
    });
  }
  client.setRequestHandler(CreateMessageRequestSchema, () => {
    seen.sampled++;
    return { role: "assistant", content: { type: "text", text: "sampled" }, model: "m" };
  });
  await client.connect(
    new StdioClientTransport({ command: PML_BIN, args: ["stdio"], env: pmlEnv(ws, env) }),
  );
  return Object.assign(client, { seen, [Symbol.asyncDispose]: () => client.close() });
}

const textOf = (r: unknown) => JSON.stringify((r as { content?: unknown }).content ?? r);

Deno.test("attack: during a call, a registry http MCP echoing its key in progress, a log line and an elicitation worded as PML's approval: scrubbed, labelled as the server's, approving nothing", async () => {
  await using leaky = startLeakyUpstream();
  await using cloud = await startCloud(leaky.url, { upstream: "/mcp", open: "/mcp" }, {
    tools: LEAKY_TOOLS,
  });
  await using ws = tempWorkspace({
    permissions: { allow: ["upstream"], ask: ["open"], deny: [] },
    env: ["UPSTREAM_TOKEN"],
  });
  const config = Deno.readTextFileSync(`${ws.dir}/.pml.json`);
  await using client = await duringCallClient(ws, cloudEnv(cloud), {
    elicit: true,
    decision: "always",
  });
  const progress: { message?: string }[] = [];
  const result = await client.callTool(
    { name: "upstream__leak", arguments: {} },
    undefined,
    { onprogress: (p) => void progress.push(p) },
  );
  const everything = JSON.stringify({ progress, seen: client.seen, result });
  assert(!everything.includes(TOKEN), everything);
  // The ordinary work beside it: every message arrived, the key replaced.
  assertEquals(progress.map((p) => p.message), ["working with Bearer [redacted]"]);
  assertEquals(client.seen.logs, [
    { level: "info", logger: "upstream", data: "log line with Bearer [redacted]" },
  ]);
  assertEquals(client.seen.questions.length, 1);
  const question = client.seen.questions[0];
  assert(question.startsWith(elicitationLabel("upstream")), question);
  assert(question.includes("[redacted]"), question);
  // The answer went to the server, as its own question's; PML approved nothing with it.
  assert(textOf(result).includes("always"), textOf(result));
  assertEquals(Deno.readTextFileSync(`${ws.dir}/.pml.json`), config);
  // A tool PML asks about is still asked, in PML's own words, before it runs.
  await client.callTool({ name: "open__leak", arguments: {} });
  const [own, server] = client.seen.questions.slice(1);
  assert(!own.startsWith("[MCP server"), own);
  assert(server.startsWith(elicitationLabel("open")), server);
});

Deno.test("attack: a registry http MCP's sampling request during a call without the sampling grant is refused, the client's model never asked", async () => {
  await using leaky = startLeakyUpstream();
  await using cloud = await startCloud(leaky.url, { upstream: "/mcp", open: "/mcp" }, {
    tools: LEAKY_TOOLS,
  });
  // Denied outright.
  {
    await using ws = tempWorkspace({
      permissions: { allow: ["upstream"], ask: [], deny: ["sampling:upstream"] },
      env: ["UPSTREAM_TOKEN"],
    });
    await using client = await duringCallClient(ws, cloudEnv(cloud), { elicit: true });
    const text = textOf(await client.callTool({ name: "upstream__sample", arguments: {} }));
    assert(text.includes("refused") && text.includes("denied"), text);
    assertEquals(client.seen.sampled, 0);
  }
  // Not granted, and no one to ask inside the call: refused with the line that would allow it.
  {
    await using ws = tempWorkspace({
      permissions: { allow: ["upstream"], ask: [], deny: [] },
      env: ["UPSTREAM_TOKEN"],
    });
    await using client = await duringCallClient(ws, cloudEnv(cloud), { elicit: false });
    const text = textOf(await client.callTool({ name: "upstream__sample", arguments: {} }));
    assert(text.includes("refused") && text.includes("sampling:upstream"), text);
    assertEquals(client.seen.sampled, 0);
  }
  // Granted: the same request is answered by the client's model (the ordinary work).
  {
    await using ws = tempWorkspace({
      permissions: { allow: ["upstream", "sampling:upstream"], ask: [], deny: [] },
      env: ["UPSTREAM_TOKEN"],
    });
    await using client = await duringCallClient(ws, cloudEnv(cloud), { elicit: false });
    const text = textOf(await client.callTool({ name: "upstream__sample", arguments: {} }));
    assert(text.includes("sampled") && !text.includes("refused"), text);
    assertEquals(client.seen.sampled, 1);
  }
});

Deno.test("attack: a registry http MCP flooding its caller with log lines during a call is bounded, at the cloud and through pml, and the call still ends", async () => {
  await using leaky = startLeakyUpstream();
  await using cloud = await startCloud(leaky.url, { upstream: "/mcp", open: "/mcp" }, {
    tools: LEAKY_TOOLS,
  });
  // Straight at the cloud: at most MAX_NOTIFICATIONS of them on the call's stream.
  {
    const transport = new StreamableHTTPClientTransport(new URL(`${cloud.url}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${cloud.key}` } },
    });
    const client = new Client({ name: "attacker", version: "1" }, { capabilities: {} });
    let logs = 0;
    client.setNotificationHandler(LoggingMessageNotificationSchema, () => void logs++);
    await client.connect(transport);
    try {
      const r = await client.callTool({ name: "open__flood", arguments: {} });
      assert(textOf(r).includes("flooded"), textOf(r));
      assert(logs > 0 && logs <= MAX_NOTIFICATIONS, `${logs} log lines`);
    } finally {
      await client.close();
    }
  }
  // Through pml: within its bound per server, and the next call still answers.
  await using ws = tempWorkspace({ permissions: { allow: ["open"], ask: [], deny: [] } });
  await using client = await duringCallClient(ws, cloudEnv(cloud), { elicit: false });
  const r = await client.callTool({ name: "open__flood", arguments: {} });
  assert(textOf(r).includes("flooded"), textOf(r));
  const logs = client.seen.logs.length;
  assert(logs > 0 && logs <= DEFAULT_NOTIFICATION_BOUND.burst * 2, `${logs} log lines`);
  assert(textOf(await client.callTool({ name: "open__flood", arguments: {} })).includes("flooded"));
});

Deno.test("attack: a registry http MCP that adds a tool of its own and says its lists changed: the agent is told, and no tool the registry does not list appears, through pml stdio and pml serve", async () => {
  await using leaky = startLeakyUpstream();
  await using cloud = await startCloud(leaky.url, { upstream: "/mcp", open: "/mcp" }, {
    tools: LEAKY_TOOLS,
  });
  await using ws = tempWorkspace({ permissions: { allow: ["open"], ask: [], deny: [] } });
  await using serve = await spawnServe(ws, cloudEnv(cloud));
  const transports = {
    stdio: () =>
      new StdioClientTransport({
        command: PML_BIN,
        args: ["stdio"],
        env: pmlEnv(ws, cloudEnv(cloud)),
      }),
    serve: () => new StreamableHTTPClientTransport(new URL(serve.url)),
  };
  for (const [through, transport] of Object.entries(transports)) {
    const client = new Client({ name: "agent", version: "1" }, { capabilities: {} });
    const changed: string[] = [];
    for (
      const schema of [
        ToolListChangedNotificationSchema,
        ResourceListChangedNotificationSchema,
        PromptListChangedNotificationSchema,
      ]
    ) {
      client.setNotificationHandler(schema, (n) => void changed.push(n.method));
    }
    await client.connect(transport());
    try {
      const before = (await client.listTools()).tools.map((t) => t.name).sort();
      assert(before.includes("open__change"), before.join(", "));
      const r = await client.callTool({ name: "open__change", arguments: {} });
      assert(textOf(r).includes("changed"), textOf(r));
      for (let i = 0; i < 160 && changed.length < 3; i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      assertEquals(changed.sort(), [
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
      ], through);
      const after = (await client.listTools()).tools.map((t) => t.name).sort();
      assertEquals(after, before, `${through}: the server's own new tool is not shown`);
      const call = await client.callTool({ name: "open__added", arguments: {} }).then(
        (r) => textOf(r),
        (e) => String(e),
      );
      assert(!call.includes("unknown tool added") && /unknown|not found/i.test(call), call);
    } finally {
      await client.close();
    }
  }
});
