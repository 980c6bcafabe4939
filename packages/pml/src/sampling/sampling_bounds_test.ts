/**
 * What one tool call may ask of a model, through the real gateway and the fixture stdio MCP: a
 * bound on the model requests of a whole call, prompts too large to send, `maxTokens` clamped, and
 * an API error that echoes the prompt and the key kept out of the audit log.
 */
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { gatewayFor } from "../testing/workspace.ts";
import { answerOf, KEY, samplerWorkspace, scriptedApi, yesToInstall } from "./_testing.ts";
import { DEFAULT_BOUNDS } from "./sampling.ts";
import { redact } from "./llm_api.ts";

const TEXT = { model: "claude-test", content: [{ type: "text", text: "ok" }], usage: {} };

function byokWorkspace() {
  return samplerWorkspace({ allow: ["sampler", "sampling:sampler"] }, {
    env: ["ANTHROPIC_API_KEY"],
  });
}

Deno.test("sampling bound per tool call: an MCP that keeps asking gets at most 32 model requests in one call, then a clear refusal", async () => {
  await using ws = byokWorkspace();
  await using api = scriptedApi([TEXT]);
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: api.url },
  });
  const answer = answerOf(
    await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "again", repeat: 300 } }),
  ) as { error?: string; answered?: number };
  assertEquals(DEFAULT_BOUNDS.maxRequestsPerCall, 32);
  assertEquals(api.requests.length, 32, "no request past the bound went out");
  assertEquals(answer.answered, 32);
  assertStringIncludes(answer.error ?? "", "this tool call has made 32 model requests");
  assertStringIncludes(ws.read(".pml/audit.log"), '"result":"over_budget"');
  // The next tool call has its own bound.
  const next = answerOf(
    await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "new call" } }),
  ) as { error?: string; answered?: number };
  assertEquals(next.answered, 1, JSON.stringify(next));
});

Deno.test("sampling: a prompt larger than the bound is refused before anything is sent; maxTokens 1e9 is clamped to the output bound", async () => {
  await using ws = byokWorkspace();
  await using api = scriptedApi([TEXT]);
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: api.url },
  });
  const huge = "x".repeat(DEFAULT_BOUNDS.maxPromptChars + 1);
  const refused = answerOf(
    await g.client.callTool({ name: "sampler:ask", arguments: { prompt: huge } }),
  );
  assertStringIncludes(refused.error ?? "", `the prompt has ${huge.length} characters`);
  assertStringIncludes(refused.error ?? "", "nothing was sent");
  assertEquals(api.requests.length, 0);
  assertStringIncludes(ws.read(".pml/audit.log"), '"result":"too_large"');

  const clamped = answerOf(
    await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "hi", maxTokens: 1e9 } }),
  );
  assert(clamped.ok, JSON.stringify(clamped));
  assertEquals(api.requests.length, 1);
  assertEquals(api.requests[0].body.max_tokens, DEFAULT_BOUNDS.maxOutputTokens);
});

Deno.test("sampling: the question shows maxTokens as clamped, with what the MCP asked", async () => {
  await using ws = samplerWorkspace({ allow: ["sampler"], ask: ["sampling:sampler"] }, {
    env: ["ANTHROPIC_API_KEY"],
  });
  await using api = scriptedApi([TEXT]);
  const questions: string[] = [];
  await using g = await gatewayFor(ws, {
    elicit: (m) => (questions.push(m), m.startsWith("Run sampler") ? "yes" : "no"),
    env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: api.url },
  });
  await g.client.callTool({ name: "sampler:ask", arguments: { prompt: "hi", maxTokens: 1e9 } });
  const asked = questions.find((q) => q.includes('Allow "sampler" to ask')) ?? "";
  assertStringIncludes(asked, "up to 16000 tokens (it asked 1000000000)");
});

Deno.test("sampling: an API error that echoes the prompt and the key leaves neither in .pml/audit.log, nor the key in the MCP's error", async () => {
  await using ws = byokWorkspace();
  const KEY = "sk-ant-api03-Zq8vW4xR7tK2mN9pL5";
  const PROMPT = "THE-CONFIDENTIAL-PROMPT-TEXT";
  // An API that echoes what it got, the key whole, cut and masked.
  await using api = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const body = await req.text();
      const key = req.headers.get("x-api-key") ?? "";
      return Response.json({
        error: {
          message: `bad request ${body} for key ${key}, ${key.slice(0, 14)}…${key.slice(-6)}, ` +
            `x-api-key: ****${key.slice(-10)}`,
        },
      }, { status: 400 });
    },
  );
  await using g = await gatewayFor(ws, {
    elicit: yesToInstall,
    env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: `http://127.0.0.1:${api.addr.port}` },
  });
  const { error } = answerOf(
    await g.client.callTool({ name: "sampler:ask", arguments: { prompt: PROMPT } }),
  );
  assertStringIncludes(error ?? "", "answered 400");
  const audit = ws.read(".pml/audit.log");
  assertStringIncludes(audit, '"error":"SAMPLING_LLM_ERROR"');
  assertStringIncludes(audit, '"status":400');
  for (const where of [audit, error ?? ""]) {
    for (let i = 0; i + 8 <= KEY.length; i++) {
      assert(!where.includes(KEY.slice(i, i + 8)), `a piece of the key: ${where}`);
    }
  }
  assert(!audit.includes(PROMPT), audit);
});

Deno.test("redact: the key and any word holding 8 of its characters in a row", () => {
  const key = "sk-ant-api03-ABCDEFGHIJKLMNOP";
  assertEquals(redact(`k=${key};`, key), "k=[key];");
  assertEquals(redact("cut sk-ant-api03-ABC… and …IJKLMNOP end", key), "cut [key]… and …[key] end");
  assertEquals(redact("short sk-ant and words", key), "short sk-ant and words");
});
