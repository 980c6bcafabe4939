/**
 * A timer that can be paused (while a human answers an elicitation, the execution's clock stops:
 * the sandbox is idle, waiting for the answer). `onExpire` runs once.
 */
export class Deadline {
  #remaining: number;
  #startedAt = 0;
  #timer?: ReturnType<typeof setTimeout>;
  #paused = 0;
  #done = false;
  readonly #onExpire: () => void;

  constructor(ms: number, onExpire: () => void) {
    this.#remaining = ms;
    this.#onExpire = onExpire;
    this.#arm();
  }

  /** Stops the clock (nested pauses count). */
  pause(): void {
    if (this.#done || this.#paused++ > 0) return;
    clearTimeout(this.#timer);
    this.#remaining -= performance.now() - this.#startedAt;
  }

  /** Restarts the clock after the last `pause`. */
  resume(): void {
    if (this.#done || --this.#paused > 0) return;
    this.#arm();
  }

  /** Cancels the timer for good. */
  clear(): void {
    this.#done = true;
    clearTimeout(this.#timer);
  }

  #arm(): void {
    this.#startedAt = performance.now();
    this.#timer = setTimeout(() => {
      if (this.#done) return;
      this.#done = true;
      this.#onExpire();
    }, Math.max(0, this.#remaining));
  }
}
