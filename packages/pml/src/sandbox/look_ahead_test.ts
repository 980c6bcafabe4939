/**
 * The look-ahead of the sandbox policies' look at the machine, on a clock the test moves (no wall
 * time: the timers it arms run when the test advances past them, in order).
 */
import { assertEquals } from "../testing/assert.ts";
import { manualClock } from "../testing/manual_clock.ts";
import { LOOK_AHEAD_EVERY_MS, LOOK_AHEAD_FOR_MS, lookAhead } from "./look_ahead.ts";
import { HOST_VIEW_REUSE_MS } from "./host_view.ts";

Deno.test("lookAhead: the looks are taken again within the reuse window while calls are likely, then no more", () => {
  const clock = manualClock();
  const refreshes: number[] = [];
  const touch = lookAhead((usedWithinMs) => {
    assertEquals(usedWithinMs, LOOK_AHEAD_FOR_MS);
    refreshes.push(clock.now());
  }, clock);
  assertEquals(
    LOOK_AHEAD_EVERY_MS < HOST_VIEW_REUSE_MS,
    true,
    "a call never finds the look expired",
  );
  touch();
  clock.advance(LOOK_AHEAD_FOR_MS + 5 * LOOK_AHEAD_EVERY_MS);
  const expected = Math.ceil(LOOK_AHEAD_FOR_MS / LOOK_AHEAD_EVERY_MS) - 1;
  assertEquals(refreshes.length, expected, "every period until the window after the message ends");
  assertEquals(refreshes.every((at, i) => at === (i + 1) * LOOK_AHEAD_EVERY_MS), true);
  assertEquals(clock.pending(), 0, "no timer left once the window has passed");
});

Deno.test("lookAhead: one timer at a time under a burst of messages, and it starts again after a pause", () => {
  const clock = manualClock();
  let refreshes = 0;
  const touch = lookAhead(() => refreshes++, clock);
  for (let i = 0; i < 100; i++) {
    touch();
    clock.advance(LOOK_AHEAD_EVERY_MS / 10);
  }
  assertEquals(clock.pending(), 1);
  assertEquals(refreshes, 100 / 10, "one refresh per period while busy, none per message");
  clock.advance(10 * LOOK_AHEAD_FOR_MS);
  assertEquals(clock.pending(), 0);
  const before = refreshes;
  touch();
  clock.advance(LOOK_AHEAD_EVERY_MS);
  assertEquals(refreshes, before + 1, "a message after a long pause starts the looks again");
});
