import type { ClientCapabilities, JSONRPCMessage } from "../sdk/types.ts";
import type { WebStandardStreamableHTTPServerTransport } from "../sdk/http_server.ts";
import { loadHttpServer } from "../sdk/load_http_server.ts";

/** The class of {@link AnswerModeTransport}, made on the SDK's transport once it is imported. */
export type AnswerModeTransportClass = ReturnType<typeof answerModeOn>;
/** The SDK's transport answering each POST in the form chosen for it ({@link answerModeOn}). */
export type AnswerModeTransport = InstanceType<AnswerModeTransportClass>;

let loading: Promise<AnswerModeTransportClass> | undefined;

/**
 * The class of {@link AnswerModeTransport}, once the SDK's HTTP server transport is imported
 * (`pml serve` imports it when it starts: `sdk/load_http_server.ts`).
 */
export function loadAnswerModeTransport(): Promise<AnswerModeTransportClass> {
  return loading ??= loadHttpServer().then((sdk) =>
    answerModeOn(sdk.WebStandardStreamableHTTPServerTransport)
  );
}

/**
 * The SDK's Streamable HTTP server transport, answering each POST in the cheaper of the two forms
 * the protocol allows when nothing but the answer can go back on it: a plain JSON body; otherwise
 * an SSE stream, on which elicitations, sampling requests and progress of the call travel before
 * its answer. The SDK chooses one form for the whole session (`enableJsonResponse`); an SSE stream
 * per call cost `pml serve` ~15% of its CPU per call under 64 sessions (docs/speed.md).
 *
 * The form is chosen per POST by {@link answersInJson} and kept per stream: the SDK reads its
 * session-wide flag when the POST starts and again when a message for it is sent, and both reads
 * run without an `await` between the flag being set here and read there (no event store is
 * configured), so two calls of one session in different forms do not mix.
 */
function answerModeOn(sdkTransport: typeof WebStandardStreamableHTTPServerTransport) {
  return class AnswerModeTransport extends sdkTransport {
    /** Handles one POST whose body the caller has read and parsed, in the form it chose. */
    handlePost(request: Request, parsedBody: unknown, json: boolean): Promise<Response> {
      sdkState(this)._enableJsonResponse = json;
      return this.handleRequest(request, { parsedBody });
    }

    override async send(
      message: JSONRPCMessage,
      options?: Parameters<WebStandardStreamableHTTPServerTransport["send"]>[1],
    ): Promise<void> {
      const state = sdkState(this);
      const answer = "id" in message && !("method" in message);
      const id = answer ? message.id : options?.relatedRequestId;
      const streamId = id === undefined ? undefined : state._requestToStreamMapping.get(id);
      const stream = streamId === undefined ? undefined : state._streamMapping.get(streamId);
      const json = stream?.resolveJson !== undefined;
      // The form of the POST this message belongs to (messages of no POST take the SDK's own path).
      state._enableJsonResponse = json;
      await super.send(message, options);
      // The SDK answers a JSON POST without dropping its stream's entry (one per call, kept for the
      // session's life): dropped here once every request of the POST is answered.
      if (json && answer && ![...state._requestToStreamMapping.values()].includes(streamId!)) {
        state._streamMapping.delete(streamId!);
      }
    }
  };
}

/**
 * True when the answer to this POST can be plain JSON: the client declared neither `elicitation`
 * nor `sampling` (so no approval question or sampling request can be sent to it during the call)
 * and no request of the POST asks for progress (`_meta.progressToken`). PML sends nothing else to
 * a client during a call: `tools/list_changed` goes on the session's GET stream.
 */
export function answersInJson(body: unknown, client: ClientCapabilities | undefined): boolean {
  if (!client || client.elicitation !== undefined || client.sampling !== undefined) return false;
  const messages = Array.isArray(body) ? body : [body];
  return messages.every((m) =>
    typeof m === "object" && m !== null &&
    (m as { params?: { _meta?: { progressToken?: unknown } } }).params?._meta?.progressToken ===
      undefined
  );
}

/** The fields of the SDK transport that the form depends on (private in its types, not in JS). */
interface SdkState {
  _enableJsonResponse: boolean;
  _streamMapping: Map<string, { resolveJson?: unknown }>;
  _requestToStreamMapping: Map<string | number, string>;
}

function sdkState(transport: WebStandardStreamableHTTPServerTransport): SdkState {
  return transport as unknown as SdkState;
}
