/**
 * The calls in flight on one {@link UpstreamSession}, oldest first: who answers the server's
 * requests and log lines (`server_requests.ts`). Each has a signal aborted when it ends (a question
 * relayed for it is then withdrawn). A message is known to be one call's when it came on that
 * call's own stream (a registry http MCP's, through the cloud, while it is handled) or names the
 * server's task that call runs as (`io.modelcontextprotocol/related-task`).
 *
 * @module
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { ServerElicit, ServerLog, ServerSample } from "./server_requests.ts";

/** A call in flight on a session, as the server's requests and log lines find it. */
export interface CallInFlight {
  readonly sample?: ServerSample;
  readonly elicit?: ServerElicit;
  readonly log?: ServerLog;
  /** The MCP session of PML's client that made the call (`CallContext.clientSession`). */
  readonly clientSession?: object;
}

/** See the module documentation. */
export class CallsInFlight {
  #count = 0;
  readonly #calls = new Set<CallInFlight>();
  /** Aborted when its call ends; made only for a call a question was relayed for. */
  readonly #ends = new WeakMap<CallInFlight, AbortController>();
  /** The call a message being handled came with (its stream says whose). */
  readonly #delivering = new AsyncLocalStorage<CallInFlight>();
  /** The calls in flight that run as a task of the server, by the server's task id, and back. */
  readonly #byTask = new Map<string, CallInFlight>();
  readonly #taskOf = new WeakMap<CallInFlight, string>();

  /** How many calls are in flight. */
  get count(): number {
    return this.#count;
  }

  /** The calls in flight, oldest first. */
  get calls(): ReadonlySet<CallInFlight> {
    return this.#calls;
  }

  /** `call` is in flight until {@link CallsInFlight.end}. */
  start(call: CallInFlight): void {
    this.#count++;
    this.#calls.add(call);
  }

  /** `call` has ended: what was relayed for it is withdrawn (`reason`). */
  end(call: CallInFlight, reason: string): void {
    this.#count--;
    this.#calls.delete(call);
    this.#ends.get(call)?.abort(new Error(reason));
    const task = this.#taskOf.get(call);
    if (task !== undefined) this.#byTask.delete(task);
  }

  /** `call` runs as the server's task `taskId`. */
  ranAs(call: CallInFlight, taskId: string): void {
    if (!this.#calls.has(call)) return;
    this.#byTask.set(taskId, call);
    this.#taskOf.set(call, taskId);
  }

  /** The call in flight that runs as the server's task `taskId`. */
  ofTask(taskId: string): CallInFlight | undefined {
    return this.#byTask.get(taskId);
  }

  /** Aborted once `call` has ended (at once when it is not in flight). */
  ended(call: CallInFlight): AbortSignal {
    if (!this.#calls.has(call)) return AbortSignal.abort(new Error("The call ended"));
    let end = this.#ends.get(call);
    if (!end) this.#ends.set(call, end = new AbortController());
    return end.signal;
  }

  /** Runs `handle` (what a message of `call`'s own stream starts) as `call`'s. */
  deliver(call: CallInFlight, handle: () => void): void {
    this.#delivering.run(call, handle);
  }

  /** The call whose own stream brought the message being handled, when one did. */
  delivered(): CallInFlight | undefined {
    return this.#delivering.getStore();
  }
}
