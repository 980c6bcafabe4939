/**
 * PML std module `text`: counting, replacing, splitting, changing case, slugs. Routed to the
 * server (DESIGN §6), which runs it in process: it imports nothing and only transforms its
 * arguments. Replacement is literal (no user regular expressions, so no catastrophic
 * backtracking in the server process).
 *
 * Module contract (DESIGN §7): one async function per action, called as `fn(args, ctx)`, and a
 * `__meta__` object with descriptions and input schemas.
 */

type Args = Record<string, unknown>;

/** Runs `fn` so that a thrown error becomes a rejected promise (every action is async). */
function settle<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error);
  }
}

function str(args: Args, name: string): string {
  const value = args[name];
  if (typeof value !== "string") throw new TypeError(`Argument "${name}" must be a string`);
  return value;
}

/** Words of a text for case conversion: split on non-alphanumerics and camelCase boundaries. */
function words(text: string): string[] {
  return text
    .replace(/([\p{Ll}\d])(\p{Lu})/gu, "$1 $2")
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word !== "");
}

const capitalise = (word: string) => word.charAt(0).toUpperCase() + word.slice(1).toLowerCase();

const CASES: Record<string, (text: string) => string> = {
  upper: (text) => text.toUpperCase(),
  lower: (text) => text.toLowerCase(),
  title: (text) => text.replace(/\p{L}[\p{L}\p{N}']*/gu, capitalise),
  sentence: (text) => text.charAt(0).toUpperCase() + text.slice(1).toLowerCase(),
  camel: (text) => words(text).map((w, i) => i === 0 ? w.toLowerCase() : capitalise(w)).join(""),
  pascal: (text) => words(text).map(capitalise).join(""),
  snake: (text) => words(text).map((w) => w.toLowerCase()).join("_"),
  kebab: (text) => words(text).map((w) => w.toLowerCase()).join("-"),
  constant: (text) => words(text).map((w) => w.toUpperCase()).join("_"),
};

/** Characters, words, lines and UTF-8 bytes of a text. */
export function count(args: Args): Promise<Record<string, number>> {
  return settle(() => {
    const text = str(args, "text");
    return {
      characters: [...text].length,
      words: text.split(/\s+/).filter((w) => w !== "").length,
      lines: text === "" ? 0 : text.split(/\r\n|\r|\n/).length,
      bytes: new TextEncoder().encode(text).length,
    };
  });
}

/** Replaces literal occurrences of `search` (all of them unless `all` is false). */
export function replace(args: Args): Promise<Record<string, unknown>> {
  return settle(() => {
    const text = str(args, "text");
    const search = str(args, "search");
    const replacement = str(args, "replacement");
    if (search === "") throw new TypeError(`Argument "search" must not be empty`);
    const parts = text.split(search);
    const replacements = args.all === false ? Math.min(1, parts.length - 1) : parts.length - 1;
    const result = args.all === false
      ? text.replace(search, () => replacement)
      : parts.join(replacement);
    return { text: result, replacements };
  });
}

/** Splits a text on a literal separator (default: newline), optionally trimming and dropping empties. */
export function split(args: Args): Promise<string[]> {
  return settle(() => {
    const text = str(args, "text");
    const separator = args.separator === undefined ? "\n" : str(args, "separator");
    let parts = text.split(separator);
    if (args.trim === true) parts = parts.map((part) => part.trim());
    if (args.removeEmpty === true) parts = parts.filter((part) => part !== "");
    if (typeof args.limit === "number") parts = parts.slice(0, Math.max(0, args.limit));
    return parts;
  });
}

/** Converts the case of a text: upper, lower, title, sentence, camel, pascal, snake, kebab, constant. */
export function convert_case(args: Args): Promise<string> {
  return settle(() => {
    const text = str(args, "text");
    const to = str(args, "to");
    const convert = Object.hasOwn(CASES, to) ? CASES[to] : undefined;
    if (!convert) {
      throw new TypeError(`Unknown case "${to}": expected one of ${Object.keys(CASES).join(", ")}`);
    }
    return convert(text);
  });
}

/** URL slug: lower case ASCII words joined by `-`, accents removed. */
export function slugify(args: Args): Promise<string> {
  return settle(() => {
    const separator = args.separator === undefined ? "-" : str(args, "separator");
    const slug = str(args, "text")
      .normalize("NFKD")
      .replace(/[\u0300-\u036f]/g, "")
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, " ")
      .trim()
      .split(" ")
      .filter((w) => w !== "")
      .join(separator);
    return slug;
  });
}

/** Shortens a text to at most `length` characters, ending with `ellipsis` when cut. */
export function truncate(args: Args): Promise<string> {
  return settle(() => {
    const chars = [...str(args, "text")];
    const length = args.length;
    if (typeof length !== "number" || !Number.isInteger(length) || length < 0) {
      throw new TypeError(`Argument "length" must be a non-negative integer`);
    }
    const ellipsis = args.ellipsis === undefined ? "…" : str(args, "ellipsis");
    if (chars.length <= length) return chars.join("");
    const keep = Math.max(0, length - [...ellipsis].length);
    return chars.slice(0, keep).join("") + ellipsis;
  });
}

const TEXT = { type: "string", description: "The input text" };

/** Tool descriptions and input schemas. */
export const __meta__ = {
  namespace: "text",
  description: "Text tools: count words, replace, split, change case, slugify, truncate strings",
  tools: {
    count: {
      description: "Count the characters, words, lines and bytes of a text",
      inputSchema: { type: "object", properties: { text: TEXT }, required: ["text"] },
    },
    replace: {
      description: "Find and replace literal text in a string (all occurrences or the first one)",
      inputSchema: {
        type: "object",
        properties: {
          text: TEXT,
          search: { type: "string", description: "Literal text to find" },
          replacement: { type: "string" },
          all: { type: "boolean", default: true, description: "Replace every occurrence" },
        },
        required: ["text", "search", "replacement"],
      },
    },
    split: {
      description: "Split a string into a list of parts on a separator (default: lines)",
      inputSchema: {
        type: "object",
        properties: {
          text: TEXT,
          separator: { type: "string", default: "\n" },
          trim: { type: "boolean", description: "Trim whitespace around each part" },
          removeEmpty: { type: "boolean", description: "Drop empty parts" },
          limit: { type: "integer", minimum: 0, description: "Keep at most this many parts" },
        },
        required: ["text"],
      },
    },
    convert_case: {
      description:
        "Change the case of a string: upper, lower, title, sentence, camelCase, PascalCase, snake_case, kebab-case, CONSTANT_CASE",
      inputSchema: {
        type: "object",
        properties: {
          text: TEXT,
          to: {
            type: "string",
            enum: [
              "upper",
              "lower",
              "title",
              "sentence",
              "camel",
              "pascal",
              "snake",
              "kebab",
              "constant",
            ],
          },
        },
        required: ["text", "to"],
      },
    },
    slugify: {
      description: "Turn a title into a URL slug (lower case, accents removed, words joined by -)",
      inputSchema: {
        type: "object",
        properties: { text: TEXT, separator: { type: "string", default: "-" } },
        required: ["text"],
      },
    },
    truncate: {
      description: "Shorten a string to a maximum length, adding an ellipsis when it is cut",
      inputSchema: {
        type: "object",
        properties: {
          text: TEXT,
          length: { type: "integer", minimum: 0 },
          ellipsis: { type: "string", default: "…" },
        },
        required: ["text", "length"],
      },
    },
  },
};
