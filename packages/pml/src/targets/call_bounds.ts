/**
 * The time bounds of calls in flight (`call_post.ts` and `transport_calls.ts`), with one timer for all.
 *
 * @module
 */

/** A call's bound: when it passes ({@link now}), and what then stops the call. */
export interface Bound {
  at: number;
  readonly ms: number;
  readonly expire: () => void;
}

const now = () => performance.now();

/**
 * The bounds of every call in flight, with one timer, armed for the earliest deadline: a timer set
 * and cleared per call was ~4-25 µs of each call (docs/speed.md, rows 6a and 6c). The cloud's POSTs
 * (`cloud/call_post.ts`) and a stdio server's calls (`upstream/transport_calls.ts`) use it. The timer stays
 * armed after the last call ends (it fires once, finds nothing due, and is not armed again) and
 * does not keep the process alive.
 */
export class CallBounds {
  readonly #live = new Set<Bound>();
  #timer?: ReturnType<typeof setTimeout>;
  /** The deadline the timer is armed for (Infinity: none). */
  #timerAt = Infinity;

  start(ms: number, expire: () => void): Bound {
    const bound = { at: now() + ms, ms, expire };
    this.#live.add(bound);
    if (bound.at < this.#timerAt) this.#arm(bound.at);
    return bound;
  }

  /** The bound starts again (a progress notification); the timer finds it later when it fires. */
  reset(bound: Bound): void {
    bound.at = now() + bound.ms;
  }

  end(bound: Bound): void {
    this.#live.delete(bound);
  }

  #arm(at: number): void {
    clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#expire(), Math.max(0, at - now()));
    (this.#timer as { unref?: () => void }).unref?.();
  }

  /** Stops every call past its bound, then arms the timer for the next deadline. */
  #expire(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const at = now();
    let next = Infinity;
    for (const bound of [...this.#live]) {
      if (bound.at <= at) {
        this.#live.delete(bound);
        bound.expire();
      } else if (bound.at < next) next = bound.at;
    }
    if (next < Infinity) this.#arm(next);
  }
}
