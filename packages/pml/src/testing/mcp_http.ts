/**
 * Test helper: an MCP server of the SDK on loopback, stateless Streamable HTTP with JSON answers
 * (a fresh `Server` per request, as a serverless MCP server runs), the shape many tests put behind
 * PML as a remote server.
 *
 * @module
 */
import { WebStandardStreamableHTTPServerTransport } from "../sdk/http_server.ts";
import type { Server } from "../sdk/server.ts";

/** A served MCP server: its `/mcp` URL and port; disposing it shuts the listener down. */
export interface ServedMcp extends AsyncDisposable {
  readonly url: string;
  readonly port: number;
}

/**
 * Serves `answer` on `127.0.0.1` at a free port. For each request `answer` gives either a
 * `Response` (a refusal: a missing key, an OAuth challenge) sent as it is, or the `Server` that
 * answers it. A `GET` (the standalone SSE stream) is refused with 405, so no stream stays open for
 * `Deno.serve`'s shutdown to wait on.
 */
export function serveMcp(
  answer: (request: Request) => Server | Response | Promise<Server | Response>,
): ServedMcp {
  const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const server = await answer(req);
    if (server instanceof Response) return server;
    if (req.method === "GET") return new Response(null, { status: 405 });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await server.connect(transport);
    return await transport.handleRequest(req);
  });
  return {
    url: `http://127.0.0.1:${http.addr.port}/mcp`,
    port: http.addr.port,
    [Symbol.asyncDispose]: () => http.shutdown(),
  };
}
