/**
 * A log line that may repeat once per request (a client's broken request, an outage of the
 * store) written at most once per period: the first at once, the next after the period with how
 * many were left out meanwhile, so that a flood of bad requests does not flood the log.
 *
 * @module
 */

/**
 * Wraps `log`: lines within `everyMs` of the last written one are counted, not written.
 *
 * @example
 * ```ts
 * const clientError = throttledLog((line) => console.error(line), Date.now);
 * clientError("pml-server: client error: …");
 * ```
 */
export function throttledLog(
  log: (line: string) => void,
  now: () => number,
  everyMs = 10_000,
): (line: string) => void {
  let writtenAt = Number.NEGATIVE_INFINITY;
  let skipped = 0;
  return (line) => {
    if (now() - writtenAt < everyMs) {
      skipped++;
      return;
    }
    log(skipped > 0 ? `${line} (and ${skipped} more like it before)` : line);
    writtenAt = now();
    skipped = 0;
  };
}
