import { Server } from "./server.ts";
import type { Transport } from "./transport.ts";
import { isJSONRPCRequest, type JSONRPCMessage, type JSONRPCRequest } from "./types.ts";

/**
 * How a message read from a peer reaches the SDK's protocol layer, which sorts it into request,
 * notification or response with its own schemas (and reports one that is none of them through
 * `onerror`, {@link isUnsortedMessageError}). PML's transports check only what they need to hand
 * it on: parsed JSON, an object with `jsonrpc: "2.0"`. The SDK's `ReadBuffer` ran the whole message
 * schema first, so every message was checked twice.
 */
export function isJsonRpcEnvelope(value: unknown): value is JSONRPCMessage {
  return typeof value === "object" && value !== null && !Array.isArray(value) &&
    (value as { jsonrpc?: unknown }).jsonrpc === "2.0";
}

/** The error the SDK's protocol layer reports for a JSON-RPC object that is no message it knows. */
export function isUnsortedMessageError(err: Error): boolean {
  return err.message.startsWith("Unknown message type: ");
}

/**
 * The SDK's `Server`, sorting what the client sends with the request schema first. The SDK's
 * protocol layer tries both response schemas before it, and a failed zod parse builds its error:
 * for every `tools/call`, ~15 µs and several KB of garbage that are no check at all (a request
 * cannot also be a response: each schema is strict and requires what the other forbids). Anything
 * that is not a request takes the SDK's own path, in its own order.
 */
export class RequestFirstServer extends Server {
  override async connect(transport: Transport): Promise<void> {
    // Set before `connect`, a handler of the transport's own would be called by the SDK first.
    if (transport.onmessage) return await super.connect(transport);
    const start = transport.start.bind(transport);
    transport.start = () => {
      const sdkSorts = transport.onmessage!;
      const onrequest = (this as unknown as SdkProtocol)._onrequest.bind(this);
      transport.onmessage = (message, extra) =>
        isJSONRPCRequest(message) ? onrequest(message, extra) : sdkSorts(message, extra);
      return start();
    };
    await super.connect(transport);
  }
}

/** The SDK protocol layer's handler of one request (private in its types, pinned SDK version). */
interface SdkProtocol {
  _onrequest(request: JSONRPCRequest, extra: unknown): void;
}
