/**
 * What the host answers a sandbox on behalf of one of its calls, besides the call's result: the
 * nested calls its module makes (`mcp.ns.action()`, `ctx.createMessage()`), run by the caller's
 * handlers ({@link answerNested}), and the outcomes of the calls the host started ahead of the
 * module (`pml:execute`'s read-ahead, {@link AheadRelay}). See `protocol.ts` for the messages.
 *
 * @module
 */
import type { HostMessage, SandboxMessage, WireError } from "./protocol.ts";

/** Handles a nested `mcp.ns.action()` call made by sandboxed code. */
export type McpHandler = (tool: string, args: unknown) => Promise<unknown>;
/** Answers a module's `ctx.createMessage(params)` (params as the module sent them, unchecked). */
export type SampleHandler = (params: unknown) => Promise<unknown>;

/**
 * Calls the host started before the module asked for them (`execute/read_ahead.ts`): their keys,
 * their outcomes (a value, or an error sent as the module's `mcp` call would get it), and what to
 * do when the module makes call `index` (at most once each).
 */
export interface AheadCalls {
  readonly keys: readonly string[];
  readonly outcomes: readonly Promise<unknown>[];
  readonly onTaken: (index: number) => void;
}

/** Outcomes of calls started ahead up to this length (their JSON line) go before the code asks. */
export const AHEAD_PUSH_CHARS = 256 * 1024;

/**
 * Sends the outcomes of one call's {@link AheadCalls} to the sandbox as they come, except large
 * ones, held until the code takes them: a read the code does not end up making costs the sandbox
 * at most {@link AHEAD_PUSH_CHARS}.
 */
export class AheadRelay {
  readonly #callId: number;
  readonly #ahead: AheadCalls;
  readonly #write: (line: string) => void;
  readonly #live: () => boolean;
  readonly #taken = new Set<number>();
  readonly #held = new Map<number, string>();

  /**
   * `write` sends one line to the sandbox; `live` says whether call `callId` still runs there
   * (outcomes that come later are dropped).
   */
  constructor(
    callId: number,
    ahead: AheadCalls,
    write: (line: string) => void,
    live: () => boolean,
  ) {
    this.#callId = callId;
    this.#ahead = ahead;
    this.#write = write;
    this.#live = live;
  }

  /** The module made call `index` (`mcp_ahead`): its held outcome goes now. */
  take(index: number): void {
    if (this.#taken.has(index)) return;
    this.#taken.add(index);
    const line = this.#held.get(index);
    if (line !== undefined) {
      this.#held.delete(index);
      this.#write(line);
    }
    this.#ahead.onTaken(index);
  }

  /** Sends (or holds) each outcome once it settles; called once the call itself was sent. */
  start(): void {
    this.#ahead.outcomes.forEach((outcome, index) => {
      const answer = (msg: HostMessage) => {
        if (!this.#live()) return;
        const line = JSON.stringify(msg) + "\n";
        if (line.length <= AHEAD_PUSH_CHARS || this.#taken.has(index)) this.#write(line);
        else this.#held.set(index, line);
      };
      const callId = this.#callId;
      outcome.then(
        (value) => answer({ t: "ahead_result", callId, index, ok: true, value: value ?? null }),
        (err) => answer({ t: "ahead_result", callId, index, ok: false, error: wireError(err) }),
      );
    });
  }
}

/**
 * Runs a module's nested `mcp` or `sample` request with the call's handler and sends its answer
 * (`mcp_result`); without one (the call has ended, or its caller gave none) an error that says so.
 */
export function answerNested(
  msg: Extract<SandboxMessage, { t: "mcp" | "sample" }>,
  handlers: { onMcp?: McpHandler; onSample?: SampleHandler } | undefined,
  send: (message: HostMessage) => void,
): void {
  const reply = (ok: boolean, valueOrError: unknown) =>
    send(
      ok
        ? { t: "mcp_result", id: msg.id, ok: true, value: valueOrError }
        : { t: "mcp_result", id: msg.id, ok: false, error: valueOrError as WireError },
    );
  const run = msg.t === "mcp"
    ? handlers?.onMcp && (() => handlers.onMcp!(msg.tool, msg.args))
    : handlers?.onSample && (() => handlers.onSample!(msg.params));
  if (!run) {
    const what = msg.t === "mcp" ? `mcp.${msg.tool}` : "Sampling (ctx.createMessage)";
    reply(false, { name: "Error", message: `${what} is not available here` });
    return;
  }
  run().then(
    (value) => reply(true, value ?? null),
    (err) => reply(false, wireError(err)),
  );
}

/** An error of the host's side of an `mcp` call, as the module gets it. */
function wireError(err: unknown): WireError {
  return {
    name: "Error",
    message: err instanceof Error ? err.message : String(err),
    code: (err as { code?: string } | undefined)?.code,
  };
}
