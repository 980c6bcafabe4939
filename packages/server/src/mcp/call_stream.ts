/**
 * What a registry http MCP sends about one proxied request before its answer (docs/cloud.md,
 * "During a call"): its progress, its log lines, its own requests to its client (elicitation,
 * sampling) and their cancellation. The endpoint answers such a request in plain JSON when nothing
 * but the answer came, and on an SSE stream (Streamable HTTP's answer to a POST) as soon as
 * something came first: {@link CallStream.respond}.
 *
 * Every message is scrubbed of the caller's keys before it is written. A server's request gets an
 * id of this endpoint (random, so it cannot be guessed) under which the caller POSTs its answer,
 * as Streamable HTTP has a client answer a request (a JSON-RPC response in a POST of its own);
 * {@link ServerRequests} gives that answer to the upstream under the server's own id, and only
 * when it comes with the API key of the call it belongs to. A server's cancellation of its request
 * is passed on under the same id. Bounds: {@link MAX_NOTIFICATIONS} notifications a request and at
 * most {@link MAX_QUEUED} messages waiting for a slow reader (more are dropped, a request among
 * them answered with an error), {@link MAX_OPEN_REQUESTS} requests of the server open at once.
 *
 * @module
 */
import { scrubbed } from "./byok.ts";
import type { ByokKeys } from "./byok.ts";
import { ErrorCode, type JSONRPCMessage } from "./sdk/types.ts";

/** Notifications passed on for one request at the most; the rest are dropped. */
export const MAX_NOTIFICATIONS = 1000;
/** Messages that may wait for a caller that does not read its stream. */
export const MAX_QUEUED = 256;
/** Requests of the server one call may have open at once. */
export const MAX_OPEN_REQUESTS = 8;

/** Where the upstream's session is answered (its SDK transport: a POST on that session). */
export interface UpstreamReply {
  send(message: JSONRPCMessage): Promise<void>;
}

type Message = Record<string, unknown>;

/**
 * The requests of upstream servers waiting for their answer from a caller, by the id this endpoint
 * gave them. One per MCP handler.
 */
export class ServerRequests {
  readonly #open = new Map<string, { owner: string; reply: (answer: Message) => void }>();

  /** Expects the answer to a request, from `owner` only; returns the id it is sent under. */
  expect(owner: string, reply: (answer: Message) => void): string {
    const id = `pml-server-${crypto.randomUUID()}`;
    this.#open.set(id, { owner, reply });
    return id;
  }

  /** Forgets a request (answered elsewhere, cancelled, or its call ended). */
  drop(id: string): void {
    this.#open.delete(id);
  }

  /**
   * Gives `answer` (a JSON-RPC response) to the request it answers; false when no request of
   * `owner` waits under its id (unknown, answered already, or another key's).
   */
  answer(owner: string, answer: Message): boolean {
    const id = answer.id;
    const open = typeof id === "string" ? this.#open.get(id) : undefined;
    if (!open || open.owner !== owner) return false;
    this.#open.delete(id as string);
    open.reply(answer);
    return true;
  }
}

const encoder = new TextEncoder();

/** One SSE event carrying `message`, as Streamable HTTP writes them. */
export function sseEvent(message: unknown): Uint8Array {
  return encoder.encode(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
}

/** See the module documentation. One per proxied request; `end()` once its answer is known. */
export class CallStream {
  /** The caller's progress token, when it asked for progress. */
  readonly progressToken?: string | number;
  readonly #keys: ByokKeys;
  readonly #owner: string;
  readonly #requests: ServerRequests;
  /** Events written before the response was chosen. */
  #queue: Uint8Array[] = [];
  #controller?: ReadableStreamDefaultController<Uint8Array>;
  #onfirst?: () => void;
  #notifications = 0;
  #ended = false;
  /** The server's request ids and the ids they were passed on under (made on its first request). */
  #passed?: Map<unknown, string>;

  constructor(
    opts: {
      keys: ByokKeys;
      owner: string;
      requests: ServerRequests;
      progressToken?: string | number;
    },
  ) {
    this.#keys = opts.keys;
    this.#owner = opts.owner;
    this.#requests = opts.requests;
    this.progressToken = opts.progressToken;
  }

  /** Progress of the call, under the caller's own token. */
  progress(p: { progress: number; total?: number; message?: string }): void {
    if (this.progressToken === undefined) return;
    this.#notify({
      jsonrpc: "2.0",
      method: "notifications/progress",
      params: { ...p, progressToken: this.progressToken },
    });
  }

  /**
   * One message the upstream sent on the call's stream (not its answer, not the call's progress):
   * a notification passed on, a request passed on under an id of this endpoint and its answer
   * given back to `upstream`, a cancellation of such a request passed on under that id.
   */
  fromUpstream(message: Message, upstream: UpstreamReply): void {
    const method = message.method;
    if (typeof method !== "string") return; // a response: not the caller's
    if ("id" in message) return this.#request(message, method, upstream);
    if (method === "notifications/cancelled") {
      const params = message.params as { requestId?: unknown; reason?: unknown } | undefined;
      const id = this.#passed?.get(params?.requestId);
      if (id === undefined) return;
      this.#passed!.delete(params!.requestId);
      this.#requests.drop(id);
      return this.#notify({ ...message, params: { ...params, requestId: id } });
    }
    // Progress of another token is not the caller's (its token is mapped by `progress`).
    if (method !== "notifications/progress") this.#notify(message);
  }

  #request(message: Message, method: string, upstream: UpstreamReply): void {
    const upstreamId = message.id;
    const refuse = (why: string) =>
      void upstream.send({
        jsonrpc: "2.0",
        id: upstreamId as string,
        error: { code: ErrorCode.InvalidRequest, message: why },
      }).catch(() => {});
    if (this.#ended) return refuse(`${method}: the call it belongs to has ended`);
    const passed = this.#passed ??= new Map();
    if (passed.size >= MAX_OPEN_REQUESTS) {
      return refuse(`${method}: more than ${MAX_OPEN_REQUESTS} requests of one call at once`);
    }
    const id = this.#requests.expect(this.#owner, (answer) => {
      passed.delete(upstreamId);
      void upstream.send({ ...answer, id: upstreamId } as JSONRPCMessage).catch(() => {});
    });
    passed.set(upstreamId, id);
    if (!this.#write({ ...message, id })) {
      passed.delete(upstreamId);
      this.#requests.drop(id);
      refuse(`${method}: the caller does not read the call's stream`);
    }
  }

  #notify(message: Message): void {
    if (this.#notifications >= MAX_NOTIFICATIONS) return;
    if (this.#write(message)) this.#notifications++;
  }

  /** Writes one event (scrubbed); false when it was dropped. */
  #write(message: Message): boolean {
    if (this.#ended) return false;
    const event = sseEvent(scrubbed(message, this.#keys));
    const controller = this.#controller;
    if (controller) {
      if ((controller.desiredSize ?? 0) <= -MAX_QUEUED) return false;
      return this.#put(controller, event);
    }
    if (this.#queue.length >= MAX_QUEUED) return false;
    this.#queue.push(event);
    this.#onfirst?.();
    return true;
  }

  /**
   * The HTTP response of the request, whose JSON-RPC answer `answering` gives (it never rejects):
   * plain JSON when it comes before anything else, else an SSE stream of what came, then of what
   * comes, then of the answer. Either way the stream ends with the answer (`end()`).
   */
  async respond(answering: Promise<JSONRPCMessage>): Promise<Response> {
    if (!this.#queue.length) {
      const answer = await new Promise<JSONRPCMessage | undefined>((resolve) => {
        this.#onfirst = () => resolve(undefined);
        answering.then(resolve);
      });
      this.#onfirst = undefined;
      if (answer && !this.#queue.length) {
        this.end();
        return new Response(JSON.stringify(answer), {
          status: 200,
          headers: { "Content-Type": "application/json" },
        });
      }
    }
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        for (const event of this.#queue) controller.enqueue(event);
        this.#queue = [];
        this.#controller = controller;
        answering.then((answer) => {
          if (this.#ended) return; // the caller went away
          // The answer is the caller's own: scrubbed by whoever made it, never dropped.
          if (this.#put(controller, sseEvent(answer))) {
            try {
              controller.close();
            } catch { /* closed from the caller's side meanwhile: nothing more to end */ }
          }
          this.end();
        });
      },
      cancel: () => this.end(),
    });
    return new Response(body, {
      status: 200,
      headers: { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" },
    });
  }

  /**
   * Enqueues `event`; false, and the stream ended, when the response's stream is closed already:
   * the caller can go away (its connection closed, its call cancelled) before the server's
   * `cancel` has run, and an enqueue or close then throws, which in the answer's callback was an
   * uncaught error of pml-server (seen once in `cloud_during_call_test.ts`, cancellation).
   */
  #put(controller: ReadableStreamDefaultController<Uint8Array>, event: Uint8Array): boolean {
    try {
      controller.enqueue(event);
      return true;
    } catch {
      this.end();
      return false;
    }
  }

  /** Nothing more is written; the server's requests still open are answered no more. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    for (const id of this.#passed?.values() ?? []) this.#requests.drop(id);
    this.#passed?.clear();
  }
}
