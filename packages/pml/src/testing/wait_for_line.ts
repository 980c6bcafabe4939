/**
 * Test and bench helper: read a child's output until it prints the line we wait for (a port, a
 * URL, a link), then keep reading the rest so that the child never blocks on a full pipe.
 */

/** What {@link waitForLine} found. */
export interface LineMatch {
  /** The pattern's match in the complete lines read so far (`match[1]` is its first group). */
  readonly match: RegExpExecArray;
  /** All the output read up to the match (it may end with part of a next line). */
  readonly printed: string;
  /**
   * The output after `printed`, once the stream has ended. The stream is read to its end in the
   * background from the moment of the match; a read error (a pipe cut as the child is killed)
   * ends it too: this resolves with what was read before it.
   */
  readonly rest: Promise<string>;
}

/**
 * Reads `stream` as UTF-8 until `pattern` matches its complete lines read so far, then drains the
 * rest in the background ({@link LineMatch.rest}). Only complete lines are matched (a last line
 * without its newline only once the stream has ended), so a pipe's chunk that ends in the middle
 * of `port=4242` cannot be read as `port=4`, and `$` in a multiline pattern means a line's end.
 * If the stream ends without a match, it throws an `Error` that names `what` and quotes all that
 * was printed.
 *
 * @example
 * ```ts
 * const child = new Deno.Command("pml-server", { args: ["serve"], stdout: "piped" }).spawn();
 * const { match } = await waitForLine(child.stdout, /listening on (http:\S+)$/m, "pml-server serve");
 * const url = match[1];
 * ```
 */
export async function waitForLine(
  stream: ReadableStream<Uint8Array>,
  pattern: RegExp,
  what: string,
): Promise<LineMatch> {
  if (pattern.global || pattern.sticky) {
    throw new TypeError(`waitForLine takes a pattern without the g or y flag, got ${pattern}`);
  }
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let printed = "";
  while (true) {
    const { value, done } = await reader.read();
    if (done) {
      const match = pattern.exec(printed);
      if (match) return { match, printed, rest: Promise.resolve("") };
      throw new Error(
        `${what} ended its output before printing a line that matches ${pattern}; it printed: ${
          JSON.stringify(printed)
        }`,
      );
    }
    printed += value;
    if (!value.includes("\n")) continue;
    const match = pattern.exec(printed.slice(0, printed.lastIndexOf("\n") + 1));
    if (match) return { match, printed, rest: readRest(reader) };
  }
}

async function readRest(reader: ReadableStreamDefaultReader<string>): Promise<string> {
  let rest = "";
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return rest;
      rest += value;
    }
  } catch {
    return rest;
  }
}
