/**
 * A scripted Gemini API on 127.0.0.1 for Gemini CLI (`GOOGLE_GEMINI_BASE_URL`). Each request that
 * offers tools is a model turn and gets the next scripted step, as one SSE event of
 * `:streamGenerateContent` (or plain JSON for `:generateContent`): function calls, or final text.
 * Every request is recorded, so tests read the function declarations Gemini CLI sent and the
 * `functionResponse` parts it returned.
 */

/** A function declaration as Gemini CLI sends it. */
export interface Declaration {
  name: string;
  description?: string;
  parametersJsonSchema?: {
    type?: string;
    properties?: Record<string, unknown>;
    required?: string[];
  };
}

/** The part of a request the tests read. */
export interface GeminiRequest {
  path: string;
  contents: { role?: string; parts: Record<string, unknown>[] }[];
  tools?: { functionDeclarations?: Declaration[] }[];
}

/** One model turn: calls to make (all in one response), or the final answer. */
export type GeminiStep = { calls: { name: string; args: Record<string, unknown> }[] } | {
  text: string;
};

export interface GeminiApi extends AsyncDisposable {
  readonly url: string;
  /** Every request, in order. */
  readonly requests: GeminiRequest[];
  /** The requests that were model turns (they offered tools). */
  readonly turns: GeminiRequest[];
}

/** The declarations of a request, by name. */
export function declarations(request: GeminiRequest): Map<string, Declaration> {
  return new Map(
    (request.tools ?? []).flatMap((t) => t.functionDeclarations ?? []).map((d) => [d.name, d]),
  );
}

/** The `functionResponse` parts of the latest user content of a turn, by function name. */
export function functionResponses(request: GeminiRequest): Map<string, string> {
  const last = request.contents.at(-1);
  const out = new Map<string, string>();
  for (const part of last?.parts ?? []) {
    const fr = part.functionResponse as { name: string; response: unknown } | undefined;
    if (fr) out.set(fr.name, JSON.stringify(fr.response));
  }
  return out;
}

/** A step, or a function of the turn's request (to use what the previous calls returned). */
export type ScriptedStep =
  | GeminiStep
  | ((request: GeminiRequest) => GeminiStep | Promise<GeminiStep>);

/** Starts the API with `steps` answered in order; later turns get "done". */
export function startGeminiApi(steps: ScriptedStep[]): GeminiApi {
  const requests: GeminiRequest[] = [];
  const turns: GeminiRequest[] = [];
  const queue = [...steps];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const path = new URL(req.url).pathname;
    const body = JSON.parse(await req.text() || "{}") as GeminiRequest;
    const request = { ...body, path };
    requests.push(request);
    let parts: Record<string, unknown>[] = [{ text: "ok" }];
    if (request.tools?.length) {
      turns.push(request);
      const next = queue.shift() ?? { text: "done" };
      const step = typeof next === "function" ? await next(request) : next;
      parts = "calls" in step
        ? step.calls.map((c) => ({ functionCall: { name: c.name, args: c.args } }))
        : [{ text: step.text }];
    }
    const reply = {
      candidates: [{ content: { role: "model", parts }, finishReason: "STOP", index: 0 }],
      usageMetadata: { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 },
    };
    if (path.endsWith(":streamGenerateContent")) {
      return new Response(`data: ${JSON.stringify(reply)}\n\n`, {
        headers: { "content-type": "text/event-stream" },
      });
    }
    if (path.endsWith(":countTokens")) return Response.json({ totalTokens: 1 });
    return Response.json(reply);
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    requests,
    turns,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}
