import { commonCallToolRequest, isCommonRequest } from "./common_shapes.ts";
import { Server } from "./server.ts";
import { isCheckedToolResult } from "./tool_result.ts";
import type { Transport } from "./transport.ts";
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  CreateTaskResultSchema,
  ErrorCode,
  isJSONRPCRequest,
  type JSONRPCMessage,
  type JSONRPCRequest,
  McpError,
  type Notification,
  type Request,
  type Result,
  type ServerNotification,
  type ServerRequest,
  type ServerResult,
} from "./types.ts";
// @ts-types="../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/server/zod-compat.d.ts"
import {
  type AnyObjectSchema,
  safeParse,
  type SchemaOutput,
} from "@modelcontextprotocol/sdk/server/zod-compat.js";
// @ts-types="../../../../node_modules/@modelcontextprotocol/sdk/dist/esm/shared/protocol.d.ts"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";

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

/** Requests a transport parsed with the SDK's `JSONRPCRequestSchema` ({@link markRequest}). */
const parsedRequests = new WeakSet<object>();

/**
 * Marks `request`, as the SDK's `JSONRPCRequestSchema` returned it, as one: {@link
 * RequestFirstServer} hands it to the protocol layer without running that schema a second time.
 */
export function markRequest(request: JSONRPCRequest): JSONRPCRequest {
  parsedRequests.add(request);
  return request;
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
 *
 * Its `tools/call` handler is the SDK `Server`'s wrapper less two parses: the request is parsed
 * with `CallToolRequestSchema` once, by the protocol layer (whose parse, of the same schema, runs
 * first and fails first: the wrapper's second parse of its output could not fail; a call of the
 * common shape gets that parse's output from `commonCallToolRequest`, and a request of the common
 * shape is sorted by `isCommonRequest`, exact shortcuts of the SDK's schemas: `common_shapes.ts`),
 * and a result {@link isCheckedToolResult} (a stdio dependency's, or an upstream's in pml-server,
 * checked against the whole `CallToolResultSchema` as it arrived) is sent as it is. Every other
 * result is checked as the SDK does, same error.
 */
export class RequestFirstServer extends Server {
  override setRequestHandler<T extends AnyObjectSchema>(
    schema: T,
    handler: (
      request: SchemaOutput<T>,
      extra: Extra,
    ) => ServerResult | Result | Promise<ServerResult | Result>,
  ): void {
    if (schema !== (CallToolRequestSchema as AnyObjectSchema)) {
      return super.setRequestHandler(schema, handler);
    }
    const wrapper = async (
      request: SchemaOutput<T> & { params: { task?: unknown } },
      extra: Extra,
    ) => {
      const result = await handler(request, extra);
      if (request.params.task) {
        return parsedOrThrow(CreateTaskResultSchema, result, "task creation");
      }
      if (isCheckedToolResult(result)) return result;
      return parsedOrThrow(CallToolResultSchema, result, "tools/call");
    };
    // The protocol layer's own registration (it parses with `schema`), under the SDK Server's;
    // a call of the common shape gets the same output from `commonCallToolRequest`.
    const protocolSetRequestHandler = Object.getPrototypeOf(Server.prototype).setRequestHandler;
    protocolSetRequestHandler.call(this, schema, wrapper);
    const handlers = (this as unknown as SdkProtocol)._requestHandlers;
    const sdkParses = handlers.get("tools/call")!;
    handlers.set("tools/call", (request, extra) => {
      const common = commonCallToolRequest(request);
      return common
        ? Promise.resolve(
          wrapper(common as SchemaOutput<T> & { params: { task?: unknown } }, extra as Extra),
        )
        : sdkParses(request, extra);
    });
  }

  override async connect(transport: Transport): Promise<void> {
    // Set before `connect`, a handler of the transport's own would be called by the SDK first.
    if (transport.onmessage) return await super.connect(transport);
    const start = transport.start.bind(transport);
    transport.start = () => {
      const sdkSorts = transport.onmessage!;
      const onrequest = (this as unknown as SdkProtocol)._onrequest.bind(this);
      transport.onmessage = (message, extra) =>
        parsedRequests.has(message) || isCommonRequest(message) || isJSONRPCRequest(message)
          ? onrequest(message as JSONRPCRequest, extra)
          : sdkSorts(message, extra);
      return start();
    };
    await super.connect(transport);
  }
}

/** What a request handler of the SDK `Server` gets besides the request. */
export type Extra = RequestHandlerExtra<ServerRequest | Request, ServerNotification | Notification>;

/** What the SDK `Server`'s wrapper does with a result: the parsed value, or its InvalidParams. */
function parsedOrThrow(schema: unknown, result: unknown, what: string): unknown {
  const parsed = safeParse(schema as Parameters<typeof safeParse>[0], result);
  if (parsed.success) return parsed.data;
  const message = parsed.error instanceof Error ? parsed.error.message : String(parsed.error);
  throw new McpError(ErrorCode.InvalidParams, `Invalid ${what} result: ${message}`);
}

/** The SDK protocol layer's handler of one request (private in its types, pinned SDK version). */
interface SdkProtocol {
  _onrequest(request: JSONRPCRequest, extra: unknown): void;
  _requestHandlers: Map<string, (request: JSONRPCRequest, extra: unknown) => Promise<unknown>>;
}
