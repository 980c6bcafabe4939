/**
 * A scripted Anthropic Messages API on loopback, for driving Claude Code (`claude -p`) in tests.
 *
 * Claude Code sends `POST /v1/messages` (streaming SSE or not) for the agent loop and for side
 * queries (titles, summaries, quota checks). A request is a *turn of the agent loop* when it offers
 * tools; each such turn gets the next scripted reply: tool calls (`tool_use` blocks) or a final text.
 * Any other request gets a short text answer. Every request is recorded, with its path, headers and
 * JSON body, so that tests can assert what the client showed the model (tool names, descriptions,
 * input schemas) and what came back (`tool_result` blocks).
 */

/** One tool the client offered the model. */
export interface OfferedTool {
  readonly name: string;
  readonly description?: string;
  readonly input_schema?: Record<string, unknown>;
}

/** A content block of a message (only the fields the tests read are typed). */
export interface Block {
  readonly type: string;
  readonly text?: string;
  readonly id?: string;
  readonly name?: string;
  readonly input?: unknown;
  readonly tool_use_id?: string;
  readonly content?: string | { type: string; text?: string }[];
  readonly is_error?: boolean;
}

/** The body of a `POST /v1/messages`. */
export interface MessagesRequest {
  readonly model: string;
  readonly stream?: boolean;
  readonly max_tokens?: number;
  readonly tools?: OfferedTool[];
  readonly messages: { role: "user" | "assistant"; content: string | Block[] }[];
  readonly [k: string]: unknown;
}

/** What the scripted API saw of one request. */
export interface Recorded {
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: MessagesRequest;
  /** True when the request was a turn of the agent loop (it offered tools). */
  readonly turn: boolean;
}

/** A call the scripted model makes. */
export interface ToolCall {
  readonly name: string;
  readonly input: Record<string, unknown>;
}

/** One reply of the scripted model: tool calls, or the final text that ends the run. */
export type Reply = { readonly tools: readonly ToolCall[] } | { readonly text: string };

/**
 * A step of the script. A function gets the request (to read the previous tool results, e.g. a
 * `workflow_id`) and returns the reply.
 */
export type Step = Reply | ((request: MessagesRequest) => Reply | Promise<Reply>);

/** The `tool_result` blocks of the last user message of a request. */
export function toolResults(request: MessagesRequest): Block[] {
  const last = request.messages.at(-1);
  if (!last || typeof last.content === "string") return [];
  return last.content.filter((b) => b.type === "tool_result");
}

/** The text of a `tool_result` block, without the `<system-reminder>` notes the client appends. */
export function resultText(block: Block): string {
  const text = typeof block.content === "string"
    ? block.content
    : (block.content ?? []).map((c) => c.text ?? "").join("\n");
  return text.replace(/<system-reminder>[\s\S]*?<\/system-reminder>/g, "").trim();
}

let ids = 0;
const nextId = (prefix: string) => `${prefix}_${Date.now().toString(36)}${(++ids).toString(36)}`;

function contentOf(reply: Reply): Block[] {
  if ("text" in reply) return [{ type: "text", text: reply.text }];
  return reply.tools.map((t) => ({
    type: "tool_use",
    id: nextId("toolu"),
    name: t.name,
    input: t.input,
  }));
}

const USAGE = {
  input_tokens: 10,
  output_tokens: 5,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
};

function message(model: string, content: Block[]) {
  return {
    id: nextId("msg"),
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn",
    stop_sequence: null,
    usage: USAGE,
  };
}

/** The message as the SSE event sequence of the streaming Messages API. */
function sse(msg: ReturnType<typeof message>): string {
  const events: [string, unknown][] = [[
    "message_start",
    {
      type: "message_start",
      message: { ...msg, content: [], stop_reason: null, usage: { ...USAGE, output_tokens: 1 } },
    },
  ]];
  msg.content.forEach((block, index) => {
    if (block.type === "text") {
      events.push(["content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "text", text: "" },
      }]);
      events.push(["content_block_delta", {
        type: "content_block_delta",
        index,
        delta: { type: "text_delta", text: block.text },
      }]);
    } else {
      events.push(["content_block_start", {
        type: "content_block_start",
        index,
        content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
      }]);
      events.push(["content_block_delta", {
        type: "content_block_delta",
        index,
        delta: { type: "input_json_delta", partial_json: JSON.stringify(block.input) },
      }]);
    }
    events.push(["content_block_stop", { type: "content_block_stop", index }]);
  });
  events.push(["message_delta", {
    type: "message_delta",
    delta: { stop_reason: msg.stop_reason, stop_sequence: null },
    usage: { output_tokens: USAGE.output_tokens },
  }]);
  events.push(["message_stop", { type: "message_stop" }]);
  return events.map(([e, d]) => `event: ${e}\ndata: ${JSON.stringify(d)}\n\n`).join("");
}

/** The scripted API, listening on 127.0.0.1 (random port) until disposed. */
export interface AnthropicApi extends AsyncDisposable {
  /** The base URL for `ANTHROPIC_BASE_URL`. */
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: Recorded[];
  /** The agent-loop turns (requests that offered tools), in order. */
  turns(): MessagesRequest[];
  /** Steps of the script not consumed yet. */
  pending(): number;
}

/**
 * Starts the scripted API. `script` is consumed one step per agent-loop turn; a turn past the end
 * of the script gets the text "done", so that a client that goes on ends its run.
 */
export function startAnthropicApi(script: readonly Step[]): AnthropicApi {
  const requests: Recorded[] = [];
  const steps = [...script];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const url = new URL(req.url);
    const raw = req.method === "POST" ? await req.text() : "";
    let body: MessagesRequest | undefined;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch { /* not JSON: recorded without a body */ }
    const isMessages = req.method === "POST" && url.pathname === "/v1/messages" && body;
    const turn = Boolean(isMessages && body!.tools?.length);
    requests.push({
      method: req.method,
      path: url.pathname,
      headers: Object.fromEntries(req.headers),
      body,
      turn,
    });
    if (url.pathname === "/v1/messages/count_tokens") {
      return Response.json({ input_tokens: 100 });
    }
    if (!isMessages) {
      return Response.json(
        { type: "error", error: { type: "not_found_error", message: `no ${url.pathname} here` } },
        { status: 404 },
      );
    }
    const step = turn ? steps.shift() : undefined;
    const reply: Reply = step === undefined
      ? { text: "done" }
      : typeof step === "function"
      ? await step(body!)
      : step;
    const msg = message(body!.model, contentOf(reply));
    if (body!.stream) {
      return new Response(sse(msg), {
        headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
      });
    }
    return Response.json(msg);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests,
    turns: () => requests.filter((r) => r.turn).map((r) => r.body!),
    pending: () => steps.length,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}
