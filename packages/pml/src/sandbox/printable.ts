/**
 * Text from a sandbox or a dependency, made safe to print on `pml`'s stderr (a human channel,
 * where approval links appear): terminal control characters (ESC and so CSI and OSC sequences,
 * BEL, backspace, carriage return, the C1 controls) and the Unicode controls that reorder or hide
 * text (bidirectional overrides, zero-width characters) are shown as `\xNN` / `\u{NNNN}` escapes,
 * so no relayed line can move the cursor, rewrite a line or print a fake `pml` line in colour.
 *
 * @example
 * ```ts
 * printable("\x1b[2K\rpml: approve"); // "\\x1b[2K\\x0dpml: approve"
 * ```
 */
export function printable(text: string): string {
  return text.replace(
    // deno-lint-ignore no-control-regex
    /[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g,
    (c) => {
      const code = c.codePointAt(0)!;
      return code <= 0xff
        ? `\\x${code.toString(16).padStart(2, "0")}`
        : `\\u{${code.toString(16)}}`;
    },
  );
}
