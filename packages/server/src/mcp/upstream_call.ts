/**
 * One `tools/call` on an open upstream session ({@link callOnSession}). The SDK `Client` opened the
 * session (`upstream_sessions.ts`); the call is posted on it by `postToolCall` (the pml package's
 * cloud calls use it too): one POST with the headers the SDK's transport sends, a JSON or SSE
 * answer read for the response to the call's own id, the result checked against the SDK's
 * `CallToolResultSchema`, a JSON-RPC error thrown as an `McpError`, an HTTP error as the
 * transport's `StreamableHTTPError`. The SDK's `Client.request` and transport cost about a third
 * of this server's CPU per proxied call (docs/speed.md). A redirected POST goes through the SDK's
 * `callTool`, which follows it.
 *
 * @module
 */
import { postToolCall, type StreamMessage } from "../../../pml/src/targets/cloud/call_post.ts";
import type { UpstreamReply } from "./call_stream.ts";
import { checkToolResult } from "../../../pml/src/sdk/tool_result.ts";
import { type CallToolResult, CallToolResultSchema, ErrorCode } from "./sdk/types.ts";
import type { OpenSession, UpstreamCall } from "./upstream_sessions.ts";

/**
 * Calls `call`'s tool on the session `open`, within `timeoutMs`; what the server sends about the
 * call goes to `call.stream` (without one, its requests are refused).
 *
 * @throws whatever the transport or the upstream threw (the session's pool decides what it means).
 */
export async function callOnSession(
  { client, post }: OpenSession,
  call: UpstreamCall,
  timeoutMs: number,
): Promise<CallToolResult> {
  const params = { name: call.name, arguments: call.args };
  const stream = call.stream;
  const upstream = client.transport!;
  const onmessage = stream
    ? (message: StreamMessage) => stream.fromUpstream(message, upstream)
    : (message: StreamMessage) => refuseRequest(message, upstream);
  return await postToolCall(post, params, {
    timeoutMs,
    resultSchema: UPSTREAM_RESULT,
    signal: call.signal,
    onprogress: stream?.progressToken !== undefined ? (p) => stream.progress(p) : undefined,
    onmessage,
  }) ??
    await client.callTool(params, undefined, {
      timeout: timeoutMs,
      ...(call.signal ? { signal: call.signal } : {}),
    }) as CallToolResult;
}

/**
 * An upstream's result, checked against the SDK's `CallToolResultSchema` and marked as checked, so
 * that the endpoint's `Server` sends it on without parsing it again; one that does not conform
 * throws the schema's error, as the SDK's `Client.callTool` did.
 */
const UPSTREAM_RESULT = {
  parse: (value: unknown) => checkToolResult(value) ?? CallToolResultSchema.parse(value),
};

/** A request of the server on a call nobody can answer (no stream): refused at once. */
function refuseRequest(message: StreamMessage, upstream: UpstreamReply): void {
  if (typeof message.method !== "string" || !("id" in message)) return;
  void upstream.send({
    jsonrpc: "2.0",
    id: message.id as string,
    error: {
      code: ErrorCode.InvalidRequest,
      message: `${message.method}: the client of this call cannot be asked (no stream)`,
    },
  }).catch(() => {});
}
