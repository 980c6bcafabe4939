/** How deep arguments are indented when shown to a person; deeper values stay on one line. */
export const SHOWN_DEPTH = 8;

/**
 * JSON for a person to read: indented by two spaces down to `depth` levels, compact below. A plain
 * `JSON.stringify(value, null, 2)` grows with the square of the nesting (an array nested 5,000
 * deep in a 10 KB call becomes ~25 MB of indentation); this stays within a few times the compact
 * size whatever the nesting.
 */
export function shownJson(value: unknown, depth = SHOWN_DEPTH): string {
  return render(value, 0, depth);
}

function render(value: unknown, level: number, depth: number): string {
  if (value === null || typeof value !== "object" || level >= depth) {
    return JSON.stringify(value) ?? "null";
  }
  const pad = "  ".repeat(level + 1);
  const end = "  ".repeat(level);
  if (Array.isArray(value)) {
    if (value.length === 0) return "[]";
    const items = value.map((v) => pad + render(v, level + 1, depth));
    return `[\n${items.join(",\n")}\n${end}]`;
  }
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return "{}";
  const items = entries.map(([k, v]) =>
    `${pad}${JSON.stringify(k)}: ${render(v, level + 1, depth)}`
  );
  return `{\n${items.join(",\n")}\n${end}}`;
}
