/** Helpers of the sampling tests: a scripted LLM API on loopback and its usual script. */

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
