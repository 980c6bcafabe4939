/**
 * A scripted OpenAI Responses API on 127.0.0.1 for Codex (`model_providers.<id>.base_url`,
 * `wire_api = "responses"`). Each request is a model turn and gets the next scripted step as an SSE
 * stream (`response.created`, one `response.output_item.done` per item, `response.completed`):
 * function calls, or a final message. Codex offers a server's MCP tools as one `namespace` tool
 * (`mcp__pml`) holding functions named by PML's exposed names; a call names the function and the
 * namespace. Every request is recorded.
 */

/** A function Codex offers (inside its `mcp__<server>` namespace). */
export interface OfferedFunction {
  name: string;
  description?: string;
  parameters?: { type?: string; properties?: Record<string, unknown>; required?: string[] };
}

export interface ResponsesRequest {
  model: string;
  input: Record<string, unknown>[];
  tools?: { type: string; name?: string; tools?: OfferedFunction[] }[];
}

export type ResponsesStep = { calls: { name: string; args: Record<string, unknown> }[] } | {
  text: string;
};
export type ScriptedResponsesStep = ResponsesStep | ((request: ResponsesRequest) => ResponsesStep);

export interface ResponsesApi extends AsyncDisposable {
  /** Base URL for Codex (`…/v1`). */
  readonly url: string;
  readonly requests: ResponsesRequest[];
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

/** The outputs Codex returned for the calls of the previous turn, by function name. */
export function callOutputs(request: ResponsesRequest): Map<string, string> {
  const names = new Map<string, string>();
  const out = new Map<string, string>();
  for (const item of request.input) {
    if (item.type === "function_call") names.set(item.call_id as string, item.name as string);
    if (item.type === "function_call_output") {
      const name = names.get(item.call_id as string) ?? "";
      out.set(name, JSON.stringify(item.output));
    }
  }
  return out;
}

const event = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** Starts the API; turns beyond `steps` get a final "done". */
export function startResponsesApi(steps: ScriptedResponsesStep[]): ResponsesApi {
  const requests: ResponsesRequest[] = [];
  const queue = [...steps];
  let n = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const request = JSON.parse(await req.text() || "{}") as ResponsesRequest;
    requests.push(request);
    const next = queue.shift() ?? { text: "done" };
    const step = typeof next === "function" ? next(request) : next;
    const id = `resp_${++n}`;
    const items = "calls" in step
      ? step.calls.map((c, i) => ({
        type: "function_call",
        id: `fc_${n}_${i}`,
        call_id: `call_${n}_${i}`,
        name: c.name,
        namespace: "mcp__pml",
        arguments: JSON.stringify(c.args),
      }))
      : [{
        type: "message",
        id: `msg_${n}`,
        role: "assistant",
        content: [{ type: "output_text", text: step.text }],
      }];
    let body = event("response.created", { response: { id } });
    items.forEach((item, i) =>
      body += event("response.output_item.done", { output_index: i, item })
    );
    body += event("response.completed", {
      response: { id, usage: { input_tokens: 1, output_tokens: 1, total_tokens: 2 } },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/v1`,
    requests,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}
