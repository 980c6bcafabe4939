/**
 * A scripted OpenAI Responses API on 127.0.0.1 for Codex (`model_providers.<id>.base_url`,
 * `wire_api = "responses"`). Each request is a model turn and gets the next scripted step as an SSE
 * stream (`response.created`, one `response.output_item.done` per item, `response.completed`):
 * function calls, or a final message. Codex offers a server's MCP tools as one `namespace` tool
 * (`mcp__pml`) holding functions named by PML's exposed names; a call names the function and the
 * namespace.
 *
 * Codex's automatic approval review (`codex exec --approve-for-me`) asks the same API, in a request
 * whose `text.format` is the JSON schema `codex_output_schema` (`outcome`: `allow` or `deny`): such
 * a request is a review, answered by `review` (deny when none is given), and is not a turn.
 *
 * Every request is recorded with its method and path.
 */

/** A function Codex offers (inside its `mcp__<server>` namespace). */
export interface OfferedFunction {
  name: string;
  type?: string;
  description?: string;
  strict?: boolean;
  parameters?: {
    type?: string;
    properties?: Record<string, unknown>;
    required?: string[];
    [key: string]: unknown;
  };
}

/** The part of a request the tests read. */
export interface ResponsesRequest {
  /** `POST /v1/responses`. */
  readonly endpoint: string;
  model: string;
  input: Record<string, unknown>[];
  tools?: { type: string; name?: string; description?: string; tools?: OfferedFunction[] }[];
  text?: { format?: { type?: string; name?: string; schema?: unknown } };
}

/** One model turn: function calls (in the `mcp__pml` namespace unless named), or a final text. */
export type ResponsesStep =
  | { calls: { name: string; args: Record<string, unknown>; namespace?: string }[] }
  | { text: string };
export type ScriptedResponsesStep = ResponsesStep | ((request: ResponsesRequest) => ResponsesStep);

/** What the automatic approval reviewer answers. */
export interface ReviewVerdict {
  outcome: "allow" | "deny";
  risk_level?: "low" | "medium" | "high" | "critical";
  rationale?: string;
}

export interface ResponsesApi extends AsyncDisposable {
  /** Base URL for Codex (`…/v1`). */
  readonly url: string;
  /** Every request, in order. */
  readonly requests: ResponsesRequest[];
  /** The requests that were model turns of the agent. */
  readonly turns: ResponsesRequest[];
  /** The requests of Codex's automatic approval review. */
  readonly reviews: ResponsesRequest[];
}

/** The functions of Codex's `mcp__<server>` namespace in a request, by name. */
export function namespaceFunctions(
  request: ResponsesRequest,
  server = "pml",
): Map<string, OfferedFunction> {
  const ns = (request.tools ?? []).find((t) =>
    t.type === "namespace" && t.name === `mcp__${server}`
  );
  return new Map((ns?.tools ?? []).map((f) => [f.name, f]));
}

/** The text of a function call output (Codex sends a string or a list of `input_text` parts). */
function outputText(output: unknown): string {
  if (typeof output === "string") return output;
  if (Array.isArray(output)) {
    return output.map((p) => (typeof p?.text === "string" ? p.text : JSON.stringify(p))).join("\n");
  }
  return JSON.stringify(output);
}

/** The outputs Codex returned for the calls of the previous turns, by function name (latest wins). */
export function callOutputs(request: ResponsesRequest): Map<string, string> {
  const names = new Map<string, string>();
  const out = new Map<string, string>();
  for (const item of request.input) {
    if (item.type === "function_call") names.set(item.call_id as string, item.name as string);
    if (item.type === "function_call_output") {
      out.set(names.get(item.call_id as string) ?? "", outputText(item.output));
    }
  }
  return out;
}

/** Whether a request is Codex's automatic approval review rather than an agent turn. */
export function isReview(request: ResponsesRequest): boolean {
  return request.text?.format?.name === "codex_output_schema";
}

const event = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

function message(id: string, text: string) {
  return {
    type: "message",
    id,
    role: "assistant",
    content: [{ type: "output_text", text }],
  };
}

/** Starts the API; turns beyond `steps` get a final "done", reviews get `review` (else deny). */
export function startResponsesApi(
  steps: ScriptedResponsesStep[],
  opts: { review?: (request: ResponsesRequest) => ReviewVerdict } = {},
): ResponsesApi {
  const requests: ResponsesRequest[] = [];
  const turns: ResponsesRequest[] = [];
  const reviews: ResponsesRequest[] = [];
  const queue = [...steps];
  let n = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const endpoint = `${req.method} ${new URL(req.url).pathname}`;
    const body = await req.text();
    let parsed: Omit<ResponsesRequest, "endpoint">;
    try {
      parsed = JSON.parse(body || "{}");
    } catch {
      return new Response(`not JSON: ${body.slice(0, 100)}`, { status: 400 });
    }
    const request: ResponsesRequest = { ...parsed, endpoint };
    requests.push(request);
    if (endpoint !== "POST /v1/responses") {
      return new Response(`the scripted API serves POST /v1/responses, not ${endpoint}`, {
        status: 404,
      });
    }
    const id = `resp_${++n}`;
    let items: Record<string, unknown>[];
    if (isReview(request)) {
      reviews.push(request);
      const verdict = opts.review?.(request) ??
        { outcome: "deny", risk_level: "high", rationale: "no review scripted" };
      items = [message(`msg_${n}`, JSON.stringify(verdict))];
    } else {
      turns.push(request);
      const next = queue.shift() ?? { text: "done" };
      const step = typeof next === "function" ? next(request) : next;
      items = "calls" in step
        ? step.calls.map((c, i) => ({
          type: "function_call",
          id: `fc_${n}_${i}`,
          call_id: `call_${n}_${i}`,
          name: c.name,
          namespace: c.namespace ?? "mcp__pml",
          arguments: JSON.stringify(c.args),
        }))
        : [message(`msg_${n}`, step.text)];
    }
    let sse = event("response.created", { response: { id } });
    items.forEach((item, i) =>
      sse += event("response.output_item.done", { output_index: i, item })
    );
    sse += event("response.completed", {
      response: { id, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } },
    });
    return new Response(sse, { headers: { "content-type": "text/event-stream" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/v1`,
    requests,
    turns,
    reviews,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}
