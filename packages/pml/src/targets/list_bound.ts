/**
 * The one bound of `tools/list` on anything remote (docs/cloud.md): the cloud's tool list, the
 * registries' catalogues and stdio metadata are each waited for at most {@link LIST_BOUND_MS},
 * all at once, so a silent cloud or registry costs a list 2 s, not the sum of its look-ups. What
 * does not come in time is left out of that list; the look-up goes on and the next list has it.
 *
 * @module
 */

/** Longest wait of `tools/list` for a remote answer (ms). */
export const LIST_BOUND_MS = 2000;

/** What {@link within} rejects with when the bound passed first. */
export class ListBoundExceeded extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = "ListBoundExceeded";
  }
}

/** `run()`, or a rejection after `ms` (the work goes on, and its late failure is dropped). */
export async function within<T>(ms: number, run: () => Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ListBoundExceeded(ms)), ms);
  });
  const work = run();
  work.catch(() => {});
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A remote load that `tools/list` waits for at most {@link LIST_BOUND_MS}, and only once: while a
 * load that already kept a list waiting is still running, later lists do not start another nor
 * wait again ({@link BoundedLoad.run} rejects with {@link ListBoundExceeded} at once). Its late
 * result is not kept here: the next list after it settled loads again (the callers cache what
 * they fetch).
 */
export class BoundedLoad {
  #late?: Promise<unknown>;

  /** `start()` within the bound, or a rejection with {@link ListBoundExceeded}. */
  async run<T>(start: () => Promise<T>, ms = LIST_BOUND_MS): Promise<T> {
    if (this.#late) throw new ListBoundExceeded(ms);
    const load = start();
    try {
      return await within(ms, () => load);
    } catch (err) {
      if (err instanceof ListBoundExceeded) {
        const late = load.then(() => {}, () => {}).finally(() => {
          if (this.#late === late) this.#late = undefined;
        });
        this.#late = late;
      }
      throw err;
    }
  }
}
