import {
  type ClientCapabilities,
  type JSONRPCMessage,
  type JSONRPCRequest,
  JSONRPCRequestSchema,
  type RequestId,
} from "../sdk/types.ts";
import { markRequest } from "../sdk/incoming.ts";
import { isCommonRequest } from "../sdk/common_shapes.ts";
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
    /** Requests of plain POSTs ({@link plainPost}) waiting for their answer, by JSON-RPC id. */
    readonly #plain = new Map<RequestId, (answer: Response) => void>();

    /** Handles one POST whose body the caller has read and parsed, in the form it chose. */
    handlePost(request: Request, parsedBody: unknown, json: boolean): Promise<Response> {
      const plain = json ? this.#plainPost(request, parsedBody) : undefined;
      if (plain) return plain;
      sdkState(this)._enableJsonResponse = json;
      return this.handleRequest(request, { parsedBody });
    }

    /**
     * As the SDK's, with each `notifications/cancelled` the transport hands on (alone or in a
     * batch, once the SDK's checks passed) followed by {@link #release} of its request.
     */
    override async start(): Promise<void> {
      const deliver = this.onmessage;
      if (deliver) {
        this.onmessage = (message, extra) => {
          deliver(message, extra);
          const id = cancelledId(message);
          if (id !== undefined) this.#release(id);
        };
      }
      await super.start();
    }

    /**
     * Requests of this session whose answer it still holds the way back for: plain POSTs waiting,
     * requests of POSTs the SDK handles, their POSTs' JSON answers or SSE streams.
     */
    get held(): number {
      const state = sdkState(this);
      const streams = state._streamMapping.size -
        (state._streamMapping.has(state._standaloneSseStreamId) ? 1 : 0);
      return this.#plain.size + state._requestToStreamMapping.size +
        state._requestResponseMap.size + streams;
    }

    /**
     * Lets go of a request the client cancelled: its answer will never be sent (the SDK's protocol
     * layer sends none once the handler's signal aborts, and the spec says the receiver frees what
     * the request holds), so its POST is ended now with no message: a plain POST or a POST
     * answered in JSON gets an SSE stream that ends at once, and an SSE stream ends, once no other
     * request of its POST is still running (a batch's other answers are then sent as the SDK sends
     * them). Without this, a cancelled request's entry and its open POST stayed for the session's
     * life, in the SDK's transport too. The SDK's protocol layer ignores a cancellation of id 0
     * (its handler runs on and answers): so does this.
     */
    #release(id: RequestId): void {
      if (!id) return;
      const plain = this.#plain.get(id);
      if (plain) {
        this.#plain.delete(id);
        plain(this.#noMessage());
        return;
      }
      const state = sdkState(this);
      const streamId = state._requestToStreamMapping.get(id);
      if (streamId === undefined) return;
      state._requestToStreamMapping.delete(id);
      state._requestResponseMap.delete(id);
      const others = [...state._requestToStreamMapping].filter(([, s]) => s === streamId);
      if (!others.every(([other]) => state._requestResponseMap.has(other))) return;
      const answers = others.map(([other]) => state._requestResponseMap.get(other));
      for (const [other] of others) {
        state._requestToStreamMapping.delete(other);
        state._requestResponseMap.delete(other);
      }
      state._resumableStreams.delete(streamId);
      const stream = state._streamMapping.get(streamId);
      if (!stream?.resolveJson) return stream?.cleanup();
      state._streamMapping.delete(streamId);
      stream.resolveJson(
        answers.length === 0
          ? this.#noMessage()
          : this.#jsonAnswer(answers.length === 1 ? answers[0] : answers),
      );
    }

    /** A POST's answer in JSON (one message or a batch's), as the SDK writes it. */
    #jsonAnswer(body: unknown): Response {
      return new Response(JSON.stringify(body), {
        status: 200,
        headers: { "Content-Type": "application/json", "mcp-session-id": this.sessionId! },
      });
    }

    /** The end of a POST whose requests get no answer: an SSE stream with no event. */
    #noMessage(): Response {
      return new Response(null, {
        status: 200,
        headers: {
          "Content-Type": "text/event-stream",
          "Cache-Control": "no-cache",
          "mcp-session-id": this.sessionId!,
        },
      });
    }

    /**
     * A POST of one request on the open session, to be answered in JSON, past the SDK's POST
     * handling: its stream bookkeeping, the SDK's type guards run again on the parsed message
     * (`isInitializeRequest` twice, failing with a zod error each time), a copy of the headers,
     * and in `send` its guards and map scans: a `tools/call` through the transport and the SDK
     * `Server`, in process, ~96 → ~58 µs of CPU (docs/speed.md, row 6c).
     * The SDK's own checks run, in its order: the Host/Origin check, `Accept`, `Content-Type`,
     * the JSON-RPC message schema, the session and the protocol version. Anything else (a
     * batch, a notification or a response, `initialize`, a closed session, a content type other
     * than exactly `application/json`, a message the schema refuses, an id already in flight)
     * goes the SDK's way (`undefined`), which answers it, errors included, as it always did.
     */
    #plainPost(request: Request, body: unknown): Promise<Response> | undefined {
      const state = sdkState(this);
      if (
        state._closed || !state._initialized || typeof body !== "object" || body === null ||
        Array.isArray(body)
      ) return undefined;
      const refused = state.validateRequestHeaders(request);
      if (refused) return Promise.resolve(refused);
      const accept = request.headers.get("accept");
      if (
        !accept?.includes("application/json") || !accept.includes("text/event-stream") ||
        request.headers.get("content-type") !== "application/json"
      ) return undefined;
      // The SDK parses with `JSONRPCMessageSchema`, whose first member is this schema: a request
      // comes out of both as the same value, and anything else goes the SDK's way. A request of
      // the common shape is one without the parse (`isCommonRequest`, exact; `common_shapes.ts`).
      let message: JSONRPCRequest;
      if (isCommonRequest(body)) message = body as JSONRPCRequest;
      else {
        const parsed = JSONRPCRequestSchema.safeParse(body);
        if (!parsed.success) return undefined;
        message = markRequest(parsed.data);
      }
      if (message.method === "initialize") return undefined;
      const invalid = state.validateSession(request) ?? state.validateProtocolVersion(request);
      if (invalid) return Promise.resolve(invalid);
      const id = message.id;
      if (this.#plain.has(id) || state._requestToStreamMapping.has(id)) return undefined;
      let headers: Record<string, string> | undefined;
      let url: URL | undefined;
      // What the SDK hands a handler with the request (PML's handlers do not read it): built when
      // read.
      const requestInfo = {
        get headers() {
          return headers ??= Object.fromEntries(request.headers.entries());
        },
        get url() {
          return url ??= new URL(request.url);
        },
      };
      return new Promise((resolve) => {
        this.#plain.set(id, resolve);
        this.onmessage?.(message, { authInfo: undefined, requestInfo });
      });
    }

    override async send(
      message: JSONRPCMessage,
      options?: Parameters<WebStandardStreamableHTTPServerTransport["send"]>[1],
    ): Promise<void> {
      const answer = "id" in message && !("method" in message);
      const id = answer ? message.id : options?.relatedRequestId;
      if (id !== undefined && this.#plain.has(id)) {
        // A plain POST's answer, as the SDK writes one JSON answer. Anything else related to it
        // is dropped, as the SDK does on a POST answered in JSON.
        if (!answer) return;
        const resolve = this.#plain.get(id)!;
        this.#plain.delete(id);
        resolve(this.#jsonAnswer(message));
        return;
      }
      const state = sdkState(this);
      const streamId = id === undefined ? undefined : state._requestToStreamMapping.get(id);
      if (streamId === undefined && !answer && cancelledId(message) !== undefined) {
        // The server gives up a request it sent the client during a call, after the client
        // cancelled that call (its POST has ended, {@link #release}): on the session's GET stream,
        // where the client still listens (dropped if it has none), as the SDK would have written it
        // on the call's stream, which it kept open.
        return await super.send(message);
      }
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

    /** As the SDK's: a plain POST still waiting is never answered (nor is a JSON one there). */
    override async close(): Promise<void> {
      this.#plain.clear();
      await super.close();
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
  _initialized: boolean;
  _closed: boolean;
  validateRequestHeaders(request: Request): Response | undefined;
  validateSession(request: Request): Response | undefined;
  validateProtocolVersion(request: Request): Response | undefined;
  _streamMapping: Map<string, { resolveJson?: (answer: Response) => void; cleanup(): void }>;
  _requestToStreamMapping: Map<RequestId, string>;
  _requestResponseMap: Map<RequestId, JSONRPCMessage>;
  _resumableStreams: Set<string>;
  _standaloneSseStreamId: string;
}

/** The id of the request a `notifications/cancelled` names; `undefined` for any other message. */
function cancelledId(message: JSONRPCMessage): RequestId | undefined {
  if (!("method" in message) || message.method !== "notifications/cancelled") return undefined;
  const id = (message.params as { requestId?: unknown } | undefined)?.requestId;
  return typeof id === "string" || typeof id === "number" ? id : undefined;
}

function sdkState(transport: WebStandardStreamableHTTPServerTransport): SdkState {
  return transport as unknown as SdkState;
}
