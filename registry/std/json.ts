/**
 * PML std module `json`: parse, stringify and query JSON. Routed to the server (DESIGN §6), which
 * runs it in process: it imports nothing, touches no file, network or environment, and only
 * transforms its arguments.
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

function text(args: Args, name: string): string {
  const value = args[name];
  if (typeof value !== "string") throw new TypeError(`Argument "${name}" must be a string`);
  return value;
}

/** Parses JSON text into a value. */
export function parse(args: Args): Promise<unknown> {
  return settle(() => {
    const source = text(args, "text");
    try {
      return JSON.parse(source);
    } catch (error) {
      throw new SyntaxError(`Cannot parse JSON: ${(error as Error).message}`);
    }
  });
}

/** Serialises a value as JSON text, compact or indented. */
export function stringify(args: Args): Promise<string> {
  return settle(() => {
    const indent = args.indent ?? 0;
    if (typeof indent !== "number" || !Number.isInteger(indent) || indent < 0 || indent > 10) {
      throw new TypeError(
        `Argument "indent" must be an integer from 0 to 10, got ${String(indent)}`,
      );
    }
    const out = JSON.stringify(args.value, null, indent || undefined);
    if (out === undefined) throw new TypeError(`Argument "value" is not JSON-serialisable`);
    return out;
  });
}

/**
 * Splits a path into keys: JSON Pointer (`/a/b/0`, `~1` and `~0` escapes) or dotted form
 * (`a.b[0]["c.d"]`, an empty path or `$` for the root).
 */
function pathKeys(path: string): string[] {
  if (path.startsWith("/")) {
    return path.slice(1).split("/").map((key) => key.replaceAll("~1", "/").replaceAll("~0", "~"));
  }
  const keys: string[] = [];
  const pattern = /\.?([^.[\]]+)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]/y;
  let rest = path.startsWith("$") ? path.slice(1) : path;
  while (rest !== "") {
    pattern.lastIndex = 0;
    const match = pattern.exec(rest);
    if (!match) throw new SyntaxError(`Invalid path "${path}" near "${rest}"`);
    keys.push(match[1] ?? match[2] ?? JSON.parse(`"${match[3]}"`));
    rest = rest.slice(match[0].length);
  }
  return keys;
}

/** Returns the part of a JSON value (or JSON text) at a path. */
export function query(args: Args): Promise<unknown> {
  return settle(() => {
    let value = "value" in args ? args.value : JSON.parse(text(args, "text"));
    const path = text(args, "path");
    const walked: string[] = [];
    for (const key of pathKeys(path)) {
      if (Array.isArray(value) && /^\d+$/.test(key) && Number(key) < value.length) {
        value = value[Number(key)];
      } else if (
        typeof value === "object" && value !== null && !Array.isArray(value) &&
        Object.hasOwn(value, key)
      ) {
        value = (value as Record<string, unknown>)[key];
      } else {
        if (args.default !== undefined) return args.default;
        throw new RangeError(`Path "${path}" not found: no key "${key}" at "${walked.join(".")}"`);
      }
      walked.push(key);
    }
    return value;
  });
}

/** Tool descriptions and input schemas. */
export const __meta__ = {
  namespace: "json",
  description: "JSON tools: parse JSON text, serialise values, read a value at a path",
  tools: {
    parse: {
      description: "Parse a JSON string into a structured value (object, array, number, …)",
      inputSchema: {
        type: "object",
        properties: { text: { type: "string", description: "JSON text to parse" } },
        required: ["text"],
      },
    },
    stringify: {
      description: "Serialise a value to a JSON string, compact or pretty-printed with indentation",
      inputSchema: {
        type: "object",
        properties: {
          value: { description: "Any JSON value" },
          indent: { type: "integer", minimum: 0, maximum: 10, description: "Spaces per level" },
        },
        required: ["value"],
      },
    },
    query: {
      description:
        "Query a JSON document: get the value at a path like a.b[0].c or a JSON Pointer /a/b/0",
      inputSchema: {
        type: "object",
        properties: {
          value: { description: "The JSON value to query (or pass `text`)" },
          text: { type: "string", description: "JSON text to query instead of `value`" },
          path: { type: "string", description: "Dotted path (a.b[0]) or JSON Pointer (/a/b/0)" },
          default: { description: "Returned when the path does not exist (else an error)" },
        },
        required: ["path"],
      },
    },
  },
};
