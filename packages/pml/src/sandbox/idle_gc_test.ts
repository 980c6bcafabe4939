import { assertEquals } from "../testing/assert.ts";
import {
  COLLECT_AFTER_LARGE_MS,
  IDLE_COLLECT_MS,
  idleCollector,
  largeMessageCollector,
  memoryReducingGc,
} from "./_idle_gc.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("idle gc: nothing to collect with when gc is not exposed", () => {
  // `deno test` runs without --expose-gc, so the default finds no `gc`.
  assertEquals(idleCollector(), undefined);
});

Deno.test("idle gc: one collection once the process has read nothing for a while, none while busy", async () => {
  let collections = 0;
  const touch = idleCollector(() => collections++)!;
  // Busy: a message every tenth of the idle period, for more than one period.
  for (let i = 0; i < 15; i++) {
    touch();
    await sleep(IDLE_COLLECT_MS / 10);
  }
  assertEquals(collections, 0);
  await sleep(IDLE_COLLECT_MS * 1.5);
  assertEquals(collections, 1);
  // Still idle: no second collection without a new message.
  await sleep(IDLE_COLLECT_MS * 1.2);
  assertEquals(collections, 1);
  touch();
  await sleep(IDLE_COLLECT_MS * 1.5);
  assertEquals(collections, 2);
});

Deno.test("idle gc: the gateway's collection asks V8 for its memory-reducing flavour", () => {
  const asked: unknown[] = [];
  memoryReducingGc((options) => asked.push(options))!();
  assertEquals(asked, [{ type: "major", execution: "sync", flavor: "last-resort" }]);
  assertEquals(memoryReducingGc(undefined), undefined);
});

Deno.test("idle gc: after a large message, each collection is the memory-reducing one", async () => {
  const asked: unknown[] = [];
  const collected = Promise.withResolvers<void>();
  const afterLarge = largeMessageCollector((options) => {
    asked.push(options);
    if (asked.length === COLLECT_AFTER_LARGE_MS.length) collected.resolve();
  })!;
  afterLarge();
  // Its timers do not keep a process alive; this one keeps the test's.
  const keep = setInterval(() => {}, 50);
  await collected.promise;
  clearInterval(keep);
  const flavour = { type: "major", execution: "sync", flavor: "last-resort" };
  assertEquals(asked, COLLECT_AFTER_LARGE_MS.map(() => flavour));
  assertEquals(largeMessageCollector(undefined), undefined);
});
