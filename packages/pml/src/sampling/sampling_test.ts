/**
 * Sampling for local MCPs, through the real gateway and a real stdio MCP (the SDK's `Server`,
 * `tests/fixtures/sampling_server.mjs`, run as a declared command in the OS sandbox) that sends
 * `sampling/createMessage` from its tool: relayed to an SDK client that declares sampling, or
 * answered by a scripted LLM API on loopback with the user's key (Anthropic Messages and OpenAI
 * chat completions), with the permission `sampling:<mcp>` deciding first.
 */
import { McpError } from "../sdk/types.ts";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { gatewayFor, textOf } from "../testing/workspace.ts";
import {
  answerOf,
  anthropicToolThenText,
  KEY,
  samplerWorkspace as workspace,
  scriptedApi,
  yesToInstall,
} from "./_testing.ts";

Deno.test("sampling relay: a client that declares sampling gets the MCP's request unchanged, and the MCP its answer", async () => {
  await using ws = workspace({ allow: ["sampler", "sampling:sampler"] });
  const seen: Record<string, unknown>[] = [];
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    sample: (params) => {
      seen.push(params);
      return {
        role: "assistant",
        model: "client-model-1",
        content: { type: "text", text: "relayed answer" },
        stopReason: "endTurn",
      };
    },
  });
  const r = await g.client.callTool({
    name: "sampler:ask",
    arguments: { prompt: "Say hi", system: "Be brief", hint: "claude-x", maxTokens: 77 },
  });
  const { ok } = answerOf(r);
  assertEquals((ok?.content as { text: string }).text, "relayed answer");
  assertEquals(ok?.model, "client-model-1");
  assertEquals(seen.length, 1);
  assertEquals(seen[0].messages, [{ role: "user", content: { type: "text", text: "Say hi" } }]);
  assertEquals(seen[0].systemPrompt, "Be brief");
  assertEquals(seen[0].maxTokens, 77);
  assertEquals(seen[0].modelPreferences, { hints: [{ name: "claude-x" }] });
  const audit = ws.read(".pml/audit.log");
  assertStringIncludes(audit, '"event":"sampling"');
  assertStringIncludes(audit, '"path":"client"');
  assert(!audit.includes("Say hi"), "the prompt is never audited");
});

Deno.test("sampling relay: the client's error reaches the MCP as its request's error", async () => {
  await using ws = workspace({ allow: ["sampler", "sampling:sampler"] });
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    sample: () => {
      throw new McpError(-32001, "the user rejected the sampling request");
    },
  });
  const r = await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "x" } });
  const { error } = answerOf(r);
  assertStringIncludes(error ?? "", "the user rejected the sampling request");
});

// The fixture cancels its request when the first progress arrives: the client answers only once
// cancelled, so this needs both directions. (Progress sent just before an answer can be dropped by
// the MCP's own SDK, which handles a response before a notification read with it.)
Deno.test("sampling relay: the client's progress reaches the MCP under its own token, and the MCP's cancellation reaches the client", async () => {
  await using ws = workspace({ allow: ["sampler", "sampling:sampler"] });
  let cancelled!: () => void;
  const clientCancelled = new Promise<void>((resolve) => cancelled = resolve);
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    sample: async (params, extra) => {
      extra.signal.addEventListener("abort", () => cancelled());
      const token = params._meta?.progressToken;
      assert(token !== undefined, "the relayed request asks the client for progress");
      await extra.sendNotification({
        method: "notifications/progress",
        params: { progressToken: token, progress: 1, total: 2, message: "reading" },
      });
      // Answers only once cancelled (the MCP cancels on the progress above).
      await new Promise((resolve) => extra.signal.addEventListener("abort", resolve));
      throw new Error("cancelled");
    },
  });
  const r = answerOf(
    await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "x", cancel: true } }),
  );
  assertStringIncludes(r.error ?? "", "cancelled by the MCP");
  assertEquals(r.progress, [{ progress: 1, total: 2, message: "reading" }]);
  // The SDK handles notifications a turn after responses: the cancellation may reach the client
  // just after the tool's result. A safety net, not a speed assertion: it only turns a hang into
  // a failure.
  let net: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    clientCancelled,
    new Promise((_, reject) => {
      net = setTimeout(() => reject(new Error("the client's request was never cancelled")), 60_000);
    }),
  ]).finally(() => clearTimeout(net));
});

Deno.test("sampling permission: deny refuses before any model is reached; the audit says so", async () => {
  await using ws = workspace({ deny: ["sampling:sampler"] });
  let asked = 0;
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    sample: () => {
      asked++;
      return { role: "assistant", model: "m", content: { type: "text", text: "no" } };
    },
  });
  const { error } = answerOf(
    await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "x" } }),
  );
  assertStringIncludes(error ?? "", 'Sampling by "sampler" is denied by .pml.json permissions');
  assertEquals(asked, 0);
  assertStringIncludes(ws.read(".pml/audit.log"), '"result":"denied"');
});

Deno.test("sampling permission: asked once with the MCP, path and size; 'always' persists per MCP; 'no' refuses", async () => {
  await using ws = workspace({});
  const questions: string[] = [];
  let answer: "always" | "no" = "no";
  await using g = await gatewayFor(ws, {
    elicit: (m) => {
      questions.push(m);
      return m.startsWith("Run sampler") ? "yes" : answer;
    },
    sample: () => ({ role: "assistant", model: "m", content: { type: "text", text: "fine" } }),
  });
  const refused = answerOf(
    await g.client.callTool({
      name: "sampler:ask",
      arguments: { prompt: "12345", hint: "claude-x" },
    }),
  );
  assertStringIncludes(refused.error ?? "", 'The user refused sampling by "sampler"');
  const question = questions.find((q) => q.includes("for a completion"))!;
  assertStringIncludes(
    question,
    `Allow "sampler" to ask your MCP client's own model (it asks for claude-x)`,
  );
  assertStringIncludes(question, "1 message(s), 5 characters, up to 200 tokens");
  answer = "always";
  const first = answerOf(
    await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "x" } }),
  );
  assertEquals((first.ok?.content as { text: string }).text, "fine");
  assertEquals(
    JSON.parse(ws.read(".pml.json")).permissions.allow.includes("sampling:sampler"),
    true,
  );
  const before = questions.length;
  await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "y" } });
  assertEquals(questions.length, before, "not asked again after always");
});

Deno.test("sampling permission: the question names the model, the provider and the key's variable, never the prompt", async () => {
  await using ws = workspace({}, { env: ["ANTHROPIC_API_KEY"] });
  await using api = scriptedApi([]);
  const questions: string[] = [];
  await using g = await gatewayFor(ws, {
    elicit: (m) => (questions.push(m), m.startsWith("Run sampler") ? "yes" : "no"),
    env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: api.url },
  });
  const { error } = answerOf(
    await g.client.callTool({
      name: "sampler:ask",
      arguments: { prompt: "secret plan", hint: "claude-opus-9" },
    }),
  );
  assertStringIncludes(error ?? "", "The user refused sampling");
  const question = questions.find((q) => q.includes("for a completion"))!;
  assertStringIncludes(
    question,
    'Allow "sampler" to ask anthropic model claude-opus-9 with your ANTHROPIC_API_KEY',
  );
  assertStringIncludes(question, "11 characters");
  assert(!question.includes("secret plan") && !question.includes(KEY));
  assertEquals(api.requests.length, 0, "refused before the API is reached");
});

Deno.test("sampling permission: a client that cannot be asked gets how to allow it", async () => {
  // The agent may answer the install here (approvals: agent): the point is the sampling question.
  await using ws = workspace({ allow: ["sampler"] }, { approvals: "agent" });
  // No elicitation: the raw command's own approval goes through approval_required first.
  await using g = await gatewayFor(ws, {
    sample: () => ({ role: "assistant", model: "m", content: { type: "text", text: "x" } }),
  });
  const pending = await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "x" } });
  const id = (pending.structuredContent as { workflow_id: string }).workflow_id;
  const r = await g.client.callTool({
    name: "pml:continue",
    arguments: { workflow_id: id, decision: "yes" },
  });
  const { error } = answerOf(r);
  assertStringIncludes(error ?? "", 'add "sampling:sampler" to "permissions.allow" in .pml.json');
});

Deno.test("sampling BYOK, Anthropic Messages: the model reads a file through the gateway, only allowed tools are offered, the key stays with PML", async () => {
  await using ws = workspace(
    { allow: ["sampler", "sampling:sampler", "filesystem:read_file"] },
    { env: ["ANTHROPIC_API_KEY"] },
  );
  ws.write("note.txt", "the answer is 42");
  await using api = scriptedApi(
    anthropicToolThenText("filesystem__read_file", { path: "note.txt" }, "It says 42."),
  );
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: api.url },
  });
  const r = await g.client.callTool({
    name: "sampler:ask",
    arguments: { prompt: "What does note.txt say?", system: "sys" },
  });
  const { ok } = answerOf(r);
  assertEquals((ok?.content as { text: string }).text, "It says 42.");
  assertEquals(
    (ok?._meta as Record<string, { turns: number; toolCalls: number }>)["pml/sampling"].turns,
    2,
  );
  assert(!textOf(r).includes(KEY), "the key never reaches the MCP");
  assertEquals(api.requests.length, 2);
  const [first, second] = api.requests;
  assertEquals(first.path, "/v1/messages");
  assertEquals(first.headers.get("x-api-key"), KEY);
  assertEquals(first.body.system, "sys");
  assertEquals(
    (first.body.tools as { name: string }[]).map((t) => t.name),
    ["filesystem__read_file"],
    "only the tools of allowedToolPatterns are offered",
  );
  const turn2 = second.body.messages as { role: string; content: Record<string, unknown>[] }[];
  const toolResult = turn2.at(-1)!.content[0];
  assertEquals(toolResult.type, "tool_result");
  assertEquals(toolResult.tool_use_id, "tu_1");
  assertStringIncludes(String(toolResult.content), "the answer is 42");
  assertStringIncludes(ws.read(".pml/audit.log"), '"provider":"anthropic"');
});

Deno.test("sampling BYOK, OpenAI chat completions: a tool outside allowedToolPatterns is refused to the model, then it answers", async () => {
  await using ws = workspace(
    { allow: ["sampler", "sampling:sampler", "filesystem:read_file", "shell:exec"] },
    { env: ["OPENAI_API_KEY"] },
  );
  await using api = scriptedApi([
    {
      model: "gpt-test",
      choices: [{
        finish_reason: "tool_calls",
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{
            id: "call_1",
            type: "function",
            function: { name: "shell__exec", arguments: '{"command":"id"}' },
          }],
        },
      }],
    },
    {
      model: "gpt-test",
      choices: [{
        finish_reason: "stop",
        message: { role: "assistant", content: "Cannot run it." },
      }],
    },
  ]);
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    env: { OPENAI_API_KEY: "sk-openai-SECRET_62", OPENAI_BASE_URL: api.url },
  });
  const r = await g.client.callTool({
    name: "sampler:ask",
    arguments: { prompt: "run id", hint: "gpt-4o" },
  });
  const { ok } = answerOf(r);
  assertEquals((ok?.content as { text: string }).text, "Cannot run it.");
  const [first, second] = api.requests;
  assertEquals(first.path, "/v1/chat/completions");
  assertEquals(first.headers.get("authorization"), "Bearer sk-openai-SECRET_62");
  assertEquals(first.body.model, "gpt-4o", "the MCP's model hint is used for its provider");
  const toolMsg = (second.body.messages as Record<string, unknown>[]).find((m) =>
    m.role === "tool"
  )!;
  assertEquals(toolMsg.tool_call_id, "call_1");
  assertStringIncludes(String(toolMsg.content), "not in the MCP's allowedToolPatterns");
  assert(!ws.read(".pml/audit.log").includes('"tool":"shell:exec"'), "shell:exec never ran");
});

Deno.test("sampling BYOK: the loop stops at its turn bound and says so", async () => {
  await using ws = workspace(
    { allow: ["sampler", "sampling:sampler", "filesystem:read_file"] },
    { env: ["ANTHROPIC_API_KEY"] },
  );
  ws.write("a.txt", "a");
  await using api = scriptedApi([{
    model: "claude-test",
    content: [{
      type: "tool_use",
      id: "again",
      name: "filesystem__read_file",
      input: { path: "a.txt" },
    }],
    stop_reason: "tool_use",
  }]);
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: api.url },
    sampling: { bounds: { maxTurns: 3 } },
  });
  const { ok } = answerOf(
    await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "loop" } }),
  );
  const meta = (ok?._meta as Record<string, Record<string, unknown>>)["pml/sampling"];
  assertEquals(meta.stopped, "max_turns");
  assertEquals(meta.turns, 3);
  assertEquals(api.requests.length, 3);
  assertStringIncludes((ok?.content as { text: string }).text, "stopped at its bound (max_turns)");
});

Deno.test("sampling BYOK: an API that never answers is ended at the time bound, with a clear error", async () => {
  await using ws = workspace({ allow: ["sampler", "sampling:sampler"] }, {
    env: ["ANTHROPIC_API_KEY"],
  });
  let arrived!: () => void;
  const reached = new Promise<void>((resolve) => arrived = resolve);
  // Holds every request open until the test ends.
  const hold = Promise.withResolvers<void>();
  await using api = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async () => {
    arrived();
    await hold.promise;
    return new Response("{}");
  });
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: `http://127.0.0.1:${api.addr.port}` },
    sampling: { bounds: { timeMs: 500 } },
  });
  try {
    const { error } = answerOf(
      await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "hang" } }),
    );
    await reached;
    assertStringIncludes(error ?? "", "stopped at its time bound (500 ms)");
    assertStringIncludes(ws.read(".pml/audit.log"), '"result":"failed"');
  } finally {
    hold.resolve();
  }
});

Deno.test("sampling BYOK: no client sampling and no key listed in .pml.json env → the error names the variable", async () => {
  // The key is in the environment but .pml.json does not list it: BYOK never takes it.
  await using ws = workspace({ allow: ["sampler", "sampling:sampler"] });
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    env: { ANTHROPIC_API_KEY: KEY },
  });
  const { error } = answerOf(
    await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "x" } }),
  );
  assertStringIncludes(error ?? "", "Set ANTHROPIC_API_KEY (or OPENAI_API_KEY)");
  assertStringIncludes(error ?? "", '"env": ["ANTHROPIC_API_KEY"]');
  assert(!(error ?? "").includes(KEY));
});
