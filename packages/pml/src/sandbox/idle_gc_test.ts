/**
 * The idle and large-message collectors, on a clock the test moves (no wall time: the timers they
 * arm run when the test advances past them, in order).
 */
import { assert, assertEquals } from "../testing/assert.ts";
import {
  COLLECT_AFTER_LARGE_MS,
  IDLE_COLLECT_MS,
  idleCollector,
  largeMessageCollector,
  memoryReducingGc,
  PROCESS_CLOCK,
} from "./_idle_gc.ts";
import { manualClock } from "../testing/manual_clock.ts";

Deno.test("idle gc: nothing to collect with when gc is not exposed", () => {
  // `deno test` runs without --expose-gc, so the default finds no `gc`.
  assertEquals(idleCollector(), undefined);
  assertEquals(largeMessageCollector(), undefined);
});

Deno.test("idle gc: one collection once the process has read nothing for a while, none while busy", () => {
  const clock = manualClock();
  let collections = 0;
  const touch = idleCollector(() => collections++, clock)!;
  // Busy: a message every tenth of the idle period, for one and a half periods.
  for (let i = 0; i < 15; i++) {
    touch();
    clock.advance(IDLE_COLLECT_MS / 10);
  }
  assertEquals(collections, 0);
  // One timer at a time, re-armed at most once per idle period: not one per message.
  assert(clock.armed <= 3, `${clock.armed} timers armed for 15 messages`);
  clock.advance(IDLE_COLLECT_MS - 1 - IDLE_COLLECT_MS / 10); // 1 ms short of a quiet period
  assertEquals(collections, 0);
  clock.advance(1);
  assertEquals(collections, 1);
  // Still idle: no second collection, and no timer left, without a new message.
  clock.advance(IDLE_COLLECT_MS * 5);
  assertEquals(collections, 1);
  assertEquals(clock.pending(), 0);
  touch();
  clock.advance(IDLE_COLLECT_MS);
  assertEquals(collections, 2);
});

Deno.test("idle gc: the gateway's collection asks V8 for its memory-reducing flavour", () => {
  const asked: unknown[] = [];
  memoryReducingGc((options) => asked.push(options))!();
  assertEquals(asked, [{ type: "major", execution: "sync", flavor: "last-resort" }]);
  assertEquals(memoryReducingGc(undefined), undefined);
});

Deno.test("idle gc: after a large message, each collection is the memory-reducing one, at its time", () => {
  const clock = manualClock();
  const asked: unknown[] = [];
  const afterLarge = largeMessageCollector((options) => asked.push(options), clock)!;
  afterLarge();
  let at = 0;
  for (const [i, ms] of COLLECT_AFTER_LARGE_MS.entries()) {
    clock.advance(ms - 1 - at);
    assertEquals(asked.length, i, `before ${ms} ms`);
    clock.advance(1);
    at = ms;
    assertEquals(asked.length, i + 1, `at ${ms} ms`);
  }
  const flavour = { type: "major", execution: "sync", flavor: "last-resort" };
  assertEquals(asked, COLLECT_AFTER_LARGE_MS.map(() => flavour));
  assertEquals(largeMessageCollector(undefined), undefined);
});

Deno.test("idle gc: the process clock's timers run (unref'd, so the test keeps its own process alive)", async () => {
  const ran = Promise.withResolvers<void>();
  PROCESS_CLOCK.after(1, ran.resolve);
  // Unref'd: this interval keeps the test's process alive until it ran.
  const keep = setInterval(() => {}, 50);
  await ran.promise;
  clearInterval(keep);
  assert(PROCESS_CLOCK.now() > 0);
});

Deno.test("idle gc: what follows the collection runs right after it, once per collection", () => {
  const clock = manualClock();
  const events: string[] = [];
  const touch = idleCollector(() => events.push("gc"), clock, () => events.push("warm up"))!;
  touch();
  clock.advance(IDLE_COLLECT_MS - 1);
  assertEquals(events, []);
  clock.advance(1);
  assertEquals(events, ["gc", "warm up"]);
  clock.advance(IDLE_COLLECT_MS * 3);
  assertEquals(events, ["gc", "warm up"]);
});
