/**
 * Helpers of the sampling tests: the fixture MCP's workspace, a scripted LLM API on loopback and
 * its usual script.
 */
import { join } from "node:path";
import { tempWorkspace, textOf } from "../testing/workspace.ts";

/** A scripted LLM API on loopback: answers in order, records each request. */
export function scriptedApi(answers: unknown[]) {
  const requests: { path: string; headers: Headers; body: Record<string, unknown> }[] = [];
  let next = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    requests.push({
      path: new URL(req.url).pathname,
      headers: req.headers,
      body: await req.json(),
    });
    const answer = answers[Math.min(next++, answers.length - 1)];
    return Response.json(answer);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/** Anthropic Messages answers: one `tool_use` of `tool` with `input`, then the text `text`. */
export function anthropicToolThenText(
  tool: string,
  input: Record<string, unknown>,
  text: string,
): unknown[] {
  return [
    {
      model: "claude-test",
      content: [{ type: "tool_use", id: "tu_1", name: tool, input }],
      stop_reason: "tool_use",
      usage: { output_tokens: 10 },
    },
    {
      model: "claude-test",
      content: [{ type: "text", text }],
      stop_reason: "end_turn",
      usage: { output_tokens: 5 },
    },
  ];
}

const ROOT = join(import.meta.dirname!, "..", "..", "..", "..");
const FIXTURE = join(ROOT, "tests", "fixtures", "sampling_server.mjs");
export const KEY = "sk-ant-SECRET_SAMPLING_KEY_61";

/** `.pml.json` with the fixture MCP as `sampler`, allowed to run; `extra` merged on top. */
export function samplerWorkspace(
  permissions: { allow?: string[]; ask?: string[]; deny?: string[] },
  extra: Record<string, unknown> = {},
) {
  return tempWorkspace({
    permissions: { allow: ["sampler", "filesystem:read_file"], ...permissions },
    private_mcps: {
      sampler: {
        type: "stdio",
        install: { command: "node", args: [FIXTURE] },
        // The fixture and the SDK it imports, read-only (node_modules may be a link elsewhere).
        permissions: { read: [ROOT, Deno.realPathSync(join(ROOT, "node_modules"))] },
        tools: [{ name: "sampler:ask", inputSchema: { type: "object" } }],
        allowedToolPatterns: ["filesystem:read_file"],
      },
    },
    ...extra,
  });
}

/** What the fixture's tool got back from its `createMessage`. */
export function answerOf(
  result: unknown,
): { ok?: Record<string, unknown>; error?: string; progress?: unknown[] } {
  const text = textOf(result);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`the fixture's tool did not answer with its JSON: ${text}`);
  }
}

/** The dependency question (the raw command runs once approved) is answered yes. */
export const yesToInstall = (
  m: string,
) => (m.startsWith("Run sampler") ? "yes" as const : "no" as const);
