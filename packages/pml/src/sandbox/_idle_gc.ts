/**
 * Full garbage collection once a process has been idle a while. Imports nothing: the sandbox
 * runner uses it as well as the gateway.
 *
 * V8 grows its heap under a burst of calls and, left alone, keeps it while idle (the gateway held
 * ~20 MB more after 4,000 calls, a std sandbox ~7 MB). Processes that run with `--expose-gc` (the
 * gateway through `bin/pml`, the std sandboxes through `LEAN_V8_FLAGS`) ask for one collection
 * after {@link IDLE_COLLECT_MS} without a message.
 */

/** How long a process must have read nothing before it collects its garbage. */
export const IDLE_COLLECT_MS = 1_000;

/** The time the collectors read and the timers they arm (a test gives its own). */
export interface IdleClock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Runs `fn` once, `ms` from now, without keeping the process alive. */
  after(ms: number, fn: () => void): void;
}

/** The process's clock and unref'd timers. */
export const PROCESS_CLOCK: IdleClock = {
  now: () => performance.now(),
  after: (ms, fn) => Deno.unrefTimer(setTimeout(fn, ms)),
};

/**
 * A function to call on each message read: once {@link IDLE_COLLECT_MS} pass without another, it
 * runs one full collection, then `afterCollect` (what the collection's loss of compiled code would
 * otherwise cost the next message: `pml stdio` warms the analysis up again). `undefined` when `gc`
 * is not exposed. One timer at a time, re-armed at
 * most once per idle period, so a busy process pays a clock read per message. Its timers never
 * keep the process alive.
 */
export function idleCollector(
  gc = (globalThis as { gc?: () => void }).gc,
  clock: IdleClock = PROCESS_CLOCK,
  afterCollect?: () => void,
): (() => void) | undefined {
  if (!gc) return undefined;
  let last = 0;
  let armed = false;
  const arm = (ms: number) => {
    armed = true;
    clock.after(ms, check);
  };
  const check = () => {
    const quiet = clock.now() - last;
    if (quiet < IDLE_COLLECT_MS) return arm(IDLE_COLLECT_MS - quiet);
    armed = false;
    gc();
    afterCollect?.();
  };
  return () => {
    last = clock.now();
    if (!armed) arm(IDLE_COLLECT_MS);
  };
}

/**
 * `gc` (exposed by `--expose-gc`) as V8's memory-reducing full collection: the "last resort"
 * flavour collects until nothing more is freed and gives the emptied pages back. `pml stdio` runs
 * without `--optimize-for-size` (which made every collection reduce memory, at ~1.7× the CPU per
 * call under load: docs/speed.md); after a 64-way burst a plain collection left its RSS ~45 MB
 * higher, this one as low as before the burst. `undefined` when `gc` is not exposed.
 */
export function memoryReducingGc(
  gc = (globalThis as { gc?: (options?: unknown) => void }).gc,
): (() => void) | undefined {
  if (!gc) return undefined;
  return () => gc({ type: "major", execution: "sync", flavor: "last-resort" });
}

/** When the collections after a large message run, in milliseconds after it was read or written. */
export const COLLECT_AFTER_LARGE_MS: readonly number[] = [250, 2_000];

/**
 * A function to call once a large message has been read or written: a memory-reducing collection
 * ({@link memoryReducingGc}) {@link COLLECT_AFTER_LARGE_MS} later (the first waits for the
 * request's own references to go: at 0 ms it freed little). A plain collection freed the garbage
 * of a 100 MB `pml:execute` result but, in about half the runs, left the process ~100 MB larger
 * until the next message's idle collection (docs/speed.md, row 8). `undefined` when `gc` is not
 * exposed. Its timers never keep the process alive.
 */
export function largeMessageCollector(
  gc = (globalThis as { gc?: (options?: unknown) => void }).gc,
  clock: IdleClock = PROCESS_CLOCK,
): (() => void) | undefined {
  const collect = memoryReducingGc(gc);
  if (!collect) return undefined;
  return () => {
    for (const ms of COLLECT_AFTER_LARGE_MS) clock.after(ms, collect);
  };
}
