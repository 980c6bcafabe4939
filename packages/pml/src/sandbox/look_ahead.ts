/**
 * The machine's look of the sandbox policies, taken ahead of the calls that need it. A sandboxed
 * call's policy reuses one look at the machine for {@link HOST_VIEW_REUSE_MS} (`host_view.ts`); the
 * first call after a longer pause took it on its own path (~100 path checks and, as root, a walk
 * of `/etc`: 15–20 ms of a `read_file` that costs ~1 ms warm on this project's machine). An agent
 * calls a tool every few seconds, so nearly every call was such a first one (docs/speed.md).
 * While calls are likely (a message read less than {@link LOOK_AHEAD_FOR_MS} ago) the gateway
 * takes the looks in use again every {@link LOOK_AHEAD_EVERY_MS}: a call then finds one less than
 * {@link HOST_VIEW_REUSE_MS} old, which keeps the bound on how late a new secret is hidden.
 */
import { type IdleClock, PROCESS_CLOCK } from "./_idle_gc.ts";
import { HOST_VIEW_REUSE_MS, refreshHostViews } from "./host_view.ts";

/** How often the looks are taken again while calls are likely: within the reuse window, with room for a late timer. */
export const LOOK_AHEAD_EVERY_MS = HOST_VIEW_REUSE_MS - 200;

/**
 * How long after the last message read the looks are kept ahead: an agent's turn between two calls
 * (the model thinking) takes a few seconds. A call after a longer pause takes its look itself.
 */
export const LOOK_AHEAD_FOR_MS = 10_000;

/**
 * A function to call on each message read: from then until {@link LOOK_AHEAD_FOR_MS} after the last
 * one, `refresh` (by default {@link refreshHostViews}) runs every {@link LOOK_AHEAD_EVERY_MS}. One
 * timer at a time, never keeping the process alive.
 *
 * @example
 * ```ts
 * transport.onread = lookAhead();
 * ```
 */
export function lookAhead(
  refresh: (usedWithinMs: number) => void = refreshHostViews,
  clock: IdleClock = PROCESS_CLOCK,
): () => void {
  let last = 0;
  let armed = false;
  const tick = () => {
    if (clock.now() - last >= LOOK_AHEAD_FOR_MS) {
      armed = false;
      return;
    }
    refresh(LOOK_AHEAD_FOR_MS);
    clock.after(LOOK_AHEAD_EVERY_MS, tick);
  };
  return () => {
    last = clock.now();
    if (armed) return;
    armed = true;
    clock.after(LOOK_AHEAD_EVERY_MS, tick);
  };
}
