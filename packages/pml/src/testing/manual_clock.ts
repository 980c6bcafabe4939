/** A clock for tests of code that arms timers: it moves only when the test says so. */
import type { IdleClock } from "../sandbox/_idle_gc.ts";

/** A clock at 0 whose timers run only when {@link advance} moves it past them. */
export function manualClock(): IdleClock & {
  advance(ms: number): void;
  armed: number;
  pending(): number;
} {
  let now = 0;
  const timers: { at: number; fn: () => void }[] = [];
  return {
    armed: 0,
    now: () => now,
    after(ms, fn) {
      this.armed++;
      timers.push({ at: now + ms, fn });
    },
    advance(ms) {
      const end = now + ms;
      for (;;) {
        timers.sort((a, b) => a.at - b.at);
        if (timers.length === 0 || timers[0].at > end) break;
        const next = timers.shift()!;
        now = next.at;
        next.fn();
      }
      now = end;
    },
    pending: () => timers.length,
  };
}
