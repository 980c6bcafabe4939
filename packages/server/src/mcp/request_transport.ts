/**
 * The transport of the MCP endpoint's one long-lived SDK `Server`: it hands the server one
 * JSON-RPC request of an HTTP request at a time, under an id of its own, and gives the answer back
 * under the caller's id. Two HTTP requests that use the same JSON-RPC id (every client starts at 0
 * or 1) never meet: the server only ever sees this transport's ids. Each request carries a context
 * (the caller's BYOK keys, the catalog snapshot, the client header) that the server's handlers
 * read back by their `extra.requestId` ({@link RequestTransport.context}).
 *
 * Building a `Server` and its Streamable HTTP transport for every request, and the transport's
 * checks and message schemas, cost ~0.25 ms of CPU per proxied call (docs/speed.md). Only plain
 * requests take this way (see `mcp_handler.ts`): everything else still goes through the SDK's
 * transport.
 *
 * Notifications the server sends about a request, and requests it would send to the client, are
 * dropped, as the SDK's transport does in JSON response mode (there is no stream to carry them).
 *
 * @module
 */
import type { Transport } from "../../../pml/src/sdk/transport.ts";
import type { JSONRPCMessage, JSONRPCRequest, RequestId } from "./sdk/types.ts";

interface Pending<C> {
  readonly context: C;
  readonly answer: (message: JSONRPCMessage) => void;
}

/**
 * A transport that carries requests in and their answers out, one promise per request.
 *
 * @example
 * ```ts
 * const transport = new RequestTransport<{ user: string }>();
 * await server.connect(transport);
 * const answer = await transport.request(message, { user: "alice" });
 * ```
 */
export class RequestTransport<C> implements Transport {
  onmessage?: Transport["onmessage"];
  onclose?: () => void;
  onerror?: (error: Error) => void;
  #lastId = 0;
  readonly #pending = new Map<number, Pending<C>>();

  start(): Promise<void> {
    return Promise.resolve();
  }

  /** Answers every request still waiting with a "connection closed" error. */
  close(): Promise<void> {
    for (const [id, pending] of this.#pending) {
      pending.answer({
        jsonrpc: "2.0",
        id,
        error: { code: -32000, message: "Connection closed: the server is shutting down" },
      });
    }
    this.#pending.clear();
    this.onclose?.();
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if ("id" in message && ("result" in message || "error" in message)) {
      const id = message.id as number;
      const pending = this.#pending.get(id);
      if (pending) {
        this.#pending.delete(id);
        pending.answer(message);
      }
    }
    return Promise.resolve();
  }

  /** The context of the request the server knows as `id` (while it is being answered). */
  context(id: RequestId): C | undefined {
    return typeof id === "number" ? this.#pending.get(id)?.context : undefined;
  }

  /** Delivers `message` to the server; resolves to its answer, under `message`'s own id. */
  request(message: JSONRPCRequest, context: C): Promise<JSONRPCMessage> {
    const id = ++this.#lastId;
    return new Promise((resolve) => {
      this.#pending.set(id, {
        context,
        answer: (answer) => resolve({ ...answer, id: message.id }),
      });
      this.onmessage?.({ ...message, id });
    });
  }
}
