import { printable } from "./printable.ts";

/** Lines kept of a sandbox's stderr, and characters quoted of them in an error. */
const KEEP_LINES = 20;
const QUOTE_CHARS = 600;

/**
 * The last lines a sandbox wrote to stderr, kept so that a process that dies (a module whose
 * pinned `npm:` import cannot be loaded, a syntax error Deno reports before any call) is reported
 * with Deno's reason rather than only its exit code.
 */
export class StderrTail {
  readonly #lines: string[] = [];

  push(line: string): void {
    // Without colours, other control sequences as escapes (the line may reach the agent).
    // deno-lint-ignore no-control-regex
    this.#lines.push(printable(line.replace(/\x1b\[[0-9;]*m/g, "")));
    if (this.#lines.length > KEEP_LINES) this.#lines.shift();
  }

  /**
   * What Deno said, for an error message: from its last `error:` line on (else the last lines),
   * at most {@link QUOTE_CHARS} characters; empty when nothing was written.
   */
  reason(): string {
    const from = this.#lines.findLastIndex((l) => /^\s*error:/.test(l));
    const lines = from >= 0 ? this.#lines.slice(from) : this.#lines.slice(-5);
    const text = lines.map((l) => l.trim()).filter(Boolean).join(" ");
    return text.length > QUOTE_CHARS ? `${text.slice(0, QUOTE_CHARS)}…` : text;
  }
}
