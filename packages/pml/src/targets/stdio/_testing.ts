/**
 * Test helpers for stdio dependencies (only tests import this file): a controllable clock, process
 * counting through `/proc`, polling, and the built-in catalogue's metadata.
 */
import { join } from "node:path";
import { CATALOGUE_DIR } from "../../deps/sources.ts";
import type { Clock } from "./clock.ts";

/** A clock that only moves when told to. */
export class FakeClock implements Clock {
  #t = 1_000_000;
  #next = 1;
  #timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.#t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = this.#next++;
    this.#timers.set(id, { at: this.#t + ms, fn });
    return id;
  }

  clearTimeout(id: unknown): void {
    this.#timers.delete(id as number);
  }

  /** Moves time forward and runs the timers that became due. */
  advance(ms: number): void {
    this.#t += ms;
    for (const [id, timer] of [...this.#timers]) {
      if (timer.at <= this.#t) {
        this.#timers.delete(id);
        timer.fn();
      }
    }
  }
}

/** Live (non-zombie) processes whose command line contains `marker`. */
export function pidsWith(marker: string): number[] {
  const pids: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${e.name}/cmdline`);
      // The Deno process itself: under the OS sandbox, bubblewrap's processes name the marker too.
      if (
        cmdline.includes(marker) && !cmdline.startsWith("/usr/bin/bwrap\0") &&
        !/^[^\0]*\/bwrap\0/.test(cmdline)
      ) pids.push(Number(e.name));
    } catch { /* exited meanwhile */ }
  }
  return pids;
}

/** Polls `cond` every 20 ms until it holds; fails after `timeoutMs`. */
export async function waitFor(
  cond: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 15_000,
) {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The built-in catalogue entry of `server` (raw JSON), to build `private_mcps` variants. */
export function catalogueEntry(server: string): Record<string, unknown> {
  return JSON.parse(Deno.readTextFileSync(join(CATALOGUE_DIR, `${server}.json`)));
}
