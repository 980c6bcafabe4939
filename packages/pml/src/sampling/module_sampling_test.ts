/**
 * Sampling for registry modules: a module published to the real server app calls
 * `ctx.createMessage(params)` from its sandbox; the gateway answers it as a sampling request of
 * the module's namespace (permission `sampling:<ns>`, the client's sampling or the user's key,
 * the `allowedToolPatterns` of its `__meta__`).
 */
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../testing/workspace.ts";
import { testRegistry } from "../registry/_testing.ts";
import { anthropicToolThenText, scriptedApi } from "./_testing.ts";

const KEY = "sk-ant-SECRET_MODULE_SAMPLING_KEY_7";

/** A module whose `ask` sends `params` (or a prompt) to `ctx.createMessage` and returns the outcome. */
const MODULE = `export async function ask(args: { prompt: string; raw?: unknown }, ctx: any) {
  const params = args.raw ?? {
    messages: [{ role: "user", content: { type: "text", text: args.prompt } }],
    maxTokens: 50,
  };
  try {
    return { ok: await ctx.createMessage(params) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}
export const __meta__ = {
  namespace: "asker",
  tools: { ask: { description: "Asks a model", inputSchema: { type: "object" } } },
  allowedToolPatterns: ["filesystem:read_file"],
};
`;

async function setup(
  permissions: Record<string, string[]>,
  opts: Parameters<typeof gatewayFor>[1] = {},
  extra: Record<string, unknown> = {},
) {
  const reg = await testRegistry();
  await reg.publish("asker", "ask", MODULE);
  const ws = tempWorkspace({ registries: [reg.url], permissions, ...extra });
  const g = await gatewayFor(ws, {
    registry: { fetch: reg.fetch, warn: () => {} },
    ...opts,
    env: { HOME: ws.home, ...opts.env },
  });
  return {
    ws,
    ask: async (args: Record<string, unknown>) => {
      const r = await g.client.callTool({ name: "asker:ask", arguments: args });
      const text = textOf(r);
      try {
        return JSON.parse(text) as { ok?: Record<string, unknown>; error?: string };
      } catch {
        throw new Error(`the module did not answer with its JSON: ${text}`);
      }
    },
    async [Symbol.asyncDispose]() {
      await g[Symbol.asyncDispose]();
      await ws[Symbol.asyncDispose]();
      await reg[Symbol.asyncDispose]();
    },
  };
}

Deno.test("module sampling: ctx.createMessage of a registry module is relayed to the client's sampling", async () => {
  const seen: unknown[] = [];
  await using s = await setup({ allow: ["asker:*", "sampling:asker"] }, {
    sample: (params) => (seen.push(params), {
      role: "assistant",
      model: "client-model",
      content: { type: "text", text: "hello module" },
    }),
  });
  const r = await s.ask({ prompt: "hi" });
  assertEquals(r.error, undefined);
  assertEquals(r.ok?.content, { type: "text", text: "hello module" });
  assertEquals(seen, [{
    messages: [{ role: "user", content: { type: "text", text: "hi" } }],
    maxTokens: 50,
  }]);
  assertStringIncludes(s.ws.read(".pml/audit.log"), '"server":"asker"');
});

Deno.test("module sampling: denied by sampling:<ns>, and an invalid request is refused with the reason", async () => {
  let asked = 0;
  await using s = await setup({ allow: ["asker:*"], deny: ["sampling:asker"] }, {
    sample: () => (asked++, { role: "assistant", model: "m", content: { type: "text", text: "" } }),
  });
  assertStringIncludes(
    (await s.ask({ prompt: "hi" })).error ?? "",
    'Sampling by "asker" is denied by .pml.json permissions',
  );
  assertStringIncludes(
    (await s.ask({ prompt: "", raw: { messages: "not a list" } })).error ?? "",
    "not a valid sampling/createMessage request",
  );
  assertEquals(asked, 0);
});

Deno.test("module sampling, BYOK: the model may use only the tools of the module's allowedToolPatterns", async () => {
  await using api = scriptedApi(
    anthropicToolThenText("filesystem__read_file", { path: "n" }, "read it"),
  );
  await using s = await setup(
    { allow: ["asker:*", "sampling:asker", "filesystem:read_file", "filesystem:write_file"] },
    { env: { ANTHROPIC_API_KEY: KEY, ANTHROPIC_BASE_URL: api.url } },
    { env: ["ANTHROPIC_API_KEY"] },
  );
  s.ws.write("n", "module note");
  const r = await s.ask({ prompt: "read n" });
  assertEquals((r.ok?.content as { text: string }).text, "read it");
  assert(!JSON.stringify(r).includes(KEY), "the key never reaches the module");
  assertEquals(
    (api.requests[0].body.tools as { name: string }[]).map((t) => t.name),
    ["filesystem__read_file"],
  );
  const last = (api.requests[1].body.messages as { content: Record<string, unknown>[] }[]).at(-1)!;
  assertStringIncludes(String(last.content[0].content), "module note");
});
