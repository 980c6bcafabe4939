/**
 * Text PML did not write (from a sandbox, a dependency, a client's configuration, a `.pml.json`, an
 * agent's arguments), made safe to print on a terminal (a human channel, where approval links and
 * questions appear): terminal control characters (ESC and so CSI and OSC sequences, BEL,
 * backspace, carriage return, the C1 controls) and the Unicode controls that reorder or hide text
 * (bidirectional overrides, zero-width characters) are shown as escapes, so no relayed line can
 * move the cursor, clear the screen, rewrite a line or print a fake `pml` line in colour.
 *
 * @example
 * ```ts
 * printable("\x1b[2K\rpml: approve"); // "\\x1b[2K\\x0dpml: approve"
 * printableLine("a\nb"); // "a\\x0ab"
 * ```
 */
// deno-lint-ignore no-control-regex
const UNSAFE = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g;

const hex = (code: number, width: number) => code.toString(16).padStart(width, "0");

/** Controls as `\xNN` / `\u{NNNN}`; newlines and tabs kept (multi-line text). */
export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.codePointAt(0)!;
    return code <= 0xff ? `\\x${hex(code, 2)}` : `\\u{${code.toString(16)}}`;
  });
}

/** {@link printable} for one field of a line (a name, a URL): newlines and tabs escaped too. */
export function printableLine(text: string): string {
  return printable(text.replace(/[\n\t]/g, (c) => `\\x${hex(c.charCodeAt(0), 2)}`));
}

/**
 * {@link printable} for a whole output, JSON included: C0 controls (which JSON text never holds
 * raw) as `\xNN`, the others as `\uNNNN`, which a JSON string reads as the same character, so a
 * `--json` output stays the same JSON.
 */
export function printableOutput(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x20 ? `\\x${hex(code, 2)}` : `\\u${hex(code, 4)}`;
  });
}
