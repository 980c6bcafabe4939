/**
 * The BYOK path of sampling (DESIGN §12, issue "sampling"): an MCP `sampling/createMessage` turned
 * into one request to an LLM API with the user's own key, and its answer turned back. Two API
 * shapes: Anthropic Messages and OpenAI-compatible chat completions. Tools, tool uses and tool
 * results map both ways, so that the sampling loop can run over either.
 *
 * The key goes in a header of this one request; it is never part of a result, an error or a log.
 *
 * @module
 */
import type {
  CreateMessageRequestParams,
  CreateMessageResult,
  SamplingMessage,
  Tool,
} from "../sdk/types.ts";
import { PmlError } from "../errors.ts";

/** Which API, where, and with which key and model. */
export interface LlmEndpoint {
  readonly provider: "anthropic" | "openai";
  /** Base URL without the `/v1/...` path (a compatible server's own address works). */
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly model: string;
  /** The name of the key's variable, for messages. */
  readonly keyName: string;
}

/** The variables each provider reads from the environment `.pml.json` `env` makes available. */
export const PROVIDERS = {
  anthropic: {
    key: "ANTHROPIC_API_KEY",
    base: "ANTHROPIC_BASE_URL",
    defaultBase: "https://api.anthropic.com",
    defaultModel: "claude-sonnet-4-5",
  },
  openai: {
    key: "OPENAI_API_KEY",
    base: "OPENAI_BASE_URL",
    defaultBase: "https://api.openai.com",
    defaultModel: "gpt-4.1",
  },
} as const;

/**
 * The endpoint for a request: the provider whose key is available (a model hint naming `gpt`/`o1`…
 * or `claude` picks between two), the hinted model when it belongs to that provider, else its
 * default. `undefined` when no key is available.
 */
export function chooseEndpoint(
  params: CreateMessageRequestParams,
  env: Readonly<Record<string, string | undefined>>,
): LlmEndpoint | undefined {
  const hints = (params.modelPreferences?.hints ?? []).map((h) => h.name ?? "").filter(Boolean);
  const wantsOpenai = hints.some((h) => /^(gpt|o\d|chatgpt)/i.test(h));
  const order: ("anthropic" | "openai")[] = wantsOpenai
    ? ["openai", "anthropic"]
    : ["anthropic", "openai"];
  for (const provider of order) {
    const p = PROVIDERS[provider];
    const apiKey = env[p.key];
    if (!apiKey) continue;
    const ours = provider === "anthropic"
      ? (h: string) => /^claude/i.test(h)
      : (h: string) => /^(gpt|o\d|chatgpt)/i.test(h);
    return {
      provider,
      baseUrl: (env[p.base] || p.defaultBase).replace(/\/+$/, ""),
      apiKey,
      model: hints.find(ours) ?? p.defaultModel,
      keyName: p.key,
    };
  }
  return undefined;
}

/** One model turn: the request as MCP states it, with the tools it may use. */
export interface Turn {
  readonly params: CreateMessageRequestParams;
  readonly tools?: readonly Tool[];
}

/** Sends one turn to the LLM API and returns its answer as an MCP sampling result. */
export async function callLlm(
  endpoint: LlmEndpoint,
  turn: Turn,
  opts: { fetch?: typeof fetch; signal?: AbortSignal } = {},
): Promise<CreateMessageResult & { usage?: { output: number } }> {
  const doFetch = opts.fetch ?? fetch;
  const [url, body, headers] = endpoint.provider === "anthropic"
    ? [`${endpoint.baseUrl}/v1/messages`, anthropicBody(endpoint, turn), {
      "x-api-key": endpoint.apiKey,
      "anthropic-version": "2023-06-01",
    }]
    : [`${endpoint.baseUrl}/v1/chat/completions`, openaiBody(endpoint, turn), {
      authorization: `Bearer ${endpoint.apiKey}`,
    }];
  let response: Response;
  try {
    response = await doFetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal: opts.signal,
    });
  } catch (err) {
    throw new PmlError(
      "SAMPLING_LLM_UNREACHABLE",
      `Sampling: cannot reach the ${endpoint.provider} API at ${endpoint.baseUrl}: ${
        (err as Error).message
      }`,
    );
  }
  const text = await response.text();
  if (!response.ok) {
    throw new PmlError(
      "SAMPLING_LLM_ERROR",
      `Sampling: the ${endpoint.provider} API answered ${response.status}: ${
        redact(text.slice(0, 2000), endpoint.apiKey).slice(0, 500)
      }`,
      { details: { status: response.status } },
    );
  }
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text);
  } catch {
    throw new PmlError(
      "SAMPLING_LLM_ERROR",
      `Sampling: the ${endpoint.provider} API answered something that is not JSON`,
    );
  }
  return endpoint.provider === "anthropic" ? fromAnthropic(json) : fromOpenai(json);
}

/** Shortest run of the key's characters that counts as a copy of it. */
const KEY_FRAGMENT = 8;

/**
 * `text` without the key: the key itself, and every word that holds 8 or more consecutive
 * characters of it (an API that echoes a key often cuts or masks part of it: `sk-ant-…wxyz1234`).
 */
export function redact(text: string, key: string): string {
  if (!key) return text;
  const out = text.split(key).join("[key]");
  if (key.length < KEY_FRAGMENT) return out;
  const fragments = new Set<string>();
  for (let i = 0; i + KEY_FRAGMENT <= key.length; i++) {
    fragments.add(key.slice(i, i + KEY_FRAGMENT));
  }
  return out.replace(/[A-Za-z0-9_\-+/=.]{8,}/g, (word) => {
    for (let i = 0; i + KEY_FRAGMENT <= word.length; i++) {
      if (fragments.has(word.slice(i, i + KEY_FRAGMENT))) return "[key]";
    }
    return word;
  });
}

type Block = Record<string, unknown>;

function blocksOf(message: SamplingMessage): Block[] {
  const content = message.content as unknown;
  return (Array.isArray(content) ? content : [content]) as Block[];
}

function textOf(blocks: readonly Block[]): string {
  return blocks.filter((b) => b.type === "text").map((b) => b.text as string).join("");
}

// ---- Anthropic Messages ----

function anthropicBody(endpoint: LlmEndpoint, turn: Turn): Record<string, unknown> {
  const { params } = turn;
  const messages = params.messages.map((m) => ({
    role: m.role,
    content: blocksOf(m).map((b): Block => {
      switch (b.type) {
        case "text":
          return { type: "text", text: b.text };
        case "image":
          return {
            type: "image",
            source: { type: "base64", media_type: b.mimeType, data: b.data },
          };
        case "tool_use":
          return { type: "tool_use", id: b.id, name: b.name, input: b.input ?? {} };
        case "tool_result":
          return {
            type: "tool_result",
            tool_use_id: b.toolUseId,
            content: textOf((b.content ?? []) as Block[]),
            ...(b.isError ? { is_error: true } : {}),
          };
        default:
          throw unsupported(b.type);
      }
    }),
  }));
  return {
    model: endpoint.model,
    max_tokens: params.maxTokens,
    messages,
    ...(params.systemPrompt ? { system: params.systemPrompt } : {}),
    ...(params.temperature !== undefined ? { temperature: params.temperature } : {}),
    ...(params.stopSequences?.length ? { stop_sequences: params.stopSequences } : {}),
    ...(turn.tools?.length
      ? {
        tools: turn.tools.map((t) => ({
          name: t.name,
          description: t.description ?? "",
          input_schema: t.inputSchema,
        })),
      }
      : {}),
  };
}

function fromAnthropic(json: Record<string, unknown>): CreateMessageResult & {
  usage?: { output: number };
} {
  const content = ((json.content ?? []) as Block[]).map((b): Block => {
    if (b.type === "tool_use") return { type: "tool_use", id: b.id, name: b.name, input: b.input };
    return { type: "text", text: String(b.text ?? "") };
  });
  const stop = json.stop_reason;
  return {
    role: "assistant",
    model: String(json.model ?? ""),
    content: (content.length === 1 ? content[0] : content) as CreateMessageResult["content"],
    stopReason: stop === "tool_use"
      ? "toolUse"
      : stop === "max_tokens"
      ? "maxTokens"
      : stop === "stop_sequence"
      ? "stopSequence"
      : "endTurn",
    usage: { output: Number((json.usage as Block | undefined)?.output_tokens ?? 0) },
  };
}

// ---- OpenAI-compatible chat completions ----

function openaiBody(endpoint: LlmEndpoint, turn: Turn): Record<string, unknown> {
  const { params } = turn;
  const messages: Block[] = [];
  if (params.systemPrompt) messages.push({ role: "system", content: params.systemPrompt });
  for (const m of params.messages) {
    const blocks = blocksOf(m);
    const results = blocks.filter((b) => b.type === "tool_result");
    for (const r of results) {
      messages.push({
        role: "tool",
        tool_call_id: r.toolUseId,
        content: textOf((r.content ?? []) as Block[]),
      });
    }
    const uses = blocks.filter((b) => b.type === "tool_use");
    const rest = blocks.filter((b) => b.type !== "tool_use" && b.type !== "tool_result");
    for (const b of rest) if (b.type !== "text") throw unsupported(b.type);
    if (rest.length === 0 && uses.length === 0) continue;
    messages.push({
      role: m.role,
      content: rest.length ? textOf(rest) : null,
      ...(uses.length
        ? {
          tool_calls: uses.map((u) => ({
            id: u.id,
            type: "function",
            function: { name: u.name, arguments: JSON.stringify(u.input ?? {}) },
          })),
        }
        : {}),
    });
  }
  return {
    model: endpoint.model,
    max_tokens: params.maxTokens,
    messages,
    ...(params.temperature !== undefined ? { temperature: params.temperature } : {}),
    ...(params.stopSequences?.length ? { stop: params.stopSequences } : {}),
    ...(turn.tools?.length
      ? {
        tools: turn.tools.map((t) => ({
          type: "function",
          function: { name: t.name, description: t.description ?? "", parameters: t.inputSchema },
        })),
      }
      : {}),
  };
}

function fromOpenai(json: Record<string, unknown>): CreateMessageResult & {
  usage?: { output: number };
} {
  const choice = ((json.choices ?? []) as Block[])[0] ?? {};
  const message = (choice.message ?? {}) as Block;
  const content: Block[] = [];
  if (typeof message.content === "string" && message.content) {
    content.push({ type: "text", text: message.content });
  }
  for (const call of (message.tool_calls ?? []) as Block[]) {
    const fn = call.function as Block;
    let input: unknown = {};
    try {
      input = JSON.parse(String(fn.arguments || "{}"));
    } catch {
      input = { _unparsed: fn.arguments };
    }
    content.push({ type: "tool_use", id: call.id, name: fn.name, input });
  }
  if (content.length === 0) content.push({ type: "text", text: "" });
  const finish = choice.finish_reason;
  return {
    role: "assistant",
    model: String(json.model ?? ""),
    content: (content.length === 1 ? content[0] : content) as CreateMessageResult["content"],
    stopReason: finish === "tool_calls" ? "toolUse" : finish === "length" ? "maxTokens" : "endTurn",
    usage: { output: Number((json.usage as Block | undefined)?.completion_tokens ?? 0) },
  };
}

function unsupported(type: unknown): PmlError {
  return new PmlError(
    "SAMPLING_UNSUPPORTED_CONTENT",
    `Sampling: content of type "${String(type)}" cannot be sent to this LLM API`,
  );
}
