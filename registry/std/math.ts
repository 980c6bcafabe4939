/**
 * PML std module `math`: arithmetic expressions and statistics. Routed to the server (DESIGN §6),
 * which runs it in process: it imports nothing and never evaluates code. Expressions go through
 * the small recursive-descent parser below (numbers, `+ - * / % ^`, parentheses, named constants,
 * variables and a fixed list of functions), nothing else.
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

const MAX_EXPRESSION = 10_000;

const CONSTANTS: Record<string, number> = { pi: Math.PI, e: Math.E, tau: 2 * Math.PI };

const FUNCTIONS: Record<string, (...xs: number[]) => number> = {
  abs: Math.abs,
  sqrt: Math.sqrt,
  cbrt: Math.cbrt,
  exp: Math.exp,
  ln: Math.log,
  log: (x, base) => base === undefined ? Math.log10(x) : Math.log(x) / Math.log(base),
  log2: Math.log2,
  log10: Math.log10,
  sin: Math.sin,
  cos: Math.cos,
  tan: Math.tan,
  asin: Math.asin,
  acos: Math.acos,
  atan: Math.atan,
  floor: Math.floor,
  ceil: Math.ceil,
  round: (x, digits = 0) => Math.round(x * 10 ** digits) / 10 ** digits,
  trunc: Math.trunc,
  sign: Math.sign,
  min: Math.min,
  max: Math.max,
  pow: Math.pow,
  hypot: Math.hypot,
};

/** Evaluates an arithmetic expression; see the module documentation for the grammar. */
function evaluateExpression(source: string, variables: Record<string, number>): number {
  const tokens =
    source.match(/\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|[A-Za-z_]\w*|\*\*|\S/g) ??
      [];
  let at = 0;
  const peek = () => tokens[at];
  const take = (expected?: string) => {
    const token = tokens[at];
    if (token === undefined || (expected !== undefined && token !== expected)) {
      throw new SyntaxError(
        `Invalid expression "${source}": expected ${expected ?? "a value"} ` +
          `but found ${token === undefined ? "the end" : `"${token}"`}`,
      );
    }
    at += 1;
    return token;
  };
  // sum := product (("+" | "-") product)*
  const sum = (): number => {
    let value = product();
    while (peek() === "+" || peek() === "-") {
      value = take() === "+" ? value + product() : value - product();
    }
    return value;
  };
  // product := unary (("*" | "/" | "%") unary)*
  const product = (): number => {
    let value = unary();
    while (peek() === "*" || peek() === "/" || peek() === "%") {
      const op = take();
      const right = unary();
      value = op === "*" ? value * right : op === "/" ? value / right : value % right;
    }
    return value;
  };
  // unary := ("-" | "+") unary | power
  const unary = (): number => {
    if (peek() === "-") return take(), -unary();
    if (peek() === "+") return take(), unary();
    return power();
  };
  // power := atom (("^" | "**") unary)?   (right-associative, binds tighter than unary minus on its left)
  const power = (): number => {
    const base = atom();
    if (peek() === "^" || peek() === "**") return take(), base ** unary();
    return base;
  };
  const atom = (): number => {
    const token = take();
    if (token === "(") {
      const value = sum();
      take(")");
      return value;
    }
    if (/^[\d.]/.test(token)) return Number(token);
    if (/^[A-Za-z_]/.test(token)) {
      const name = token.toLowerCase();
      if (peek() === "(") {
        const fn = Object.hasOwn(FUNCTIONS, name) ? FUNCTIONS[name] : undefined;
        if (!fn) throw new ReferenceError(`Unknown function "${token}" in "${source}"`);
        take("(");
        const args: number[] = [];
        if (peek() !== ")") {
          args.push(sum());
          while (peek() === ",") take(), args.push(sum());
        }
        take(")");
        return fn(...args);
      }
      if (Object.hasOwn(variables, token)) return variables[token];
      if (Object.hasOwn(CONSTANTS, name)) return CONSTANTS[name];
      throw new ReferenceError(`Unknown name "${token}" in "${source}"`);
    }
    throw new SyntaxError(`Invalid expression "${source}": unexpected "${token}"`);
  };
  const value = sum();
  if (at < tokens.length) {
    throw new SyntaxError(`Invalid expression "${source}": unexpected "${tokens[at]}"`);
  }
  return value;
}

function numbers(args: Args): number[] {
  const list = args.numbers;
  if (!Array.isArray(list) || list.length === 0 || !list.every((x) => typeof x === "number")) {
    throw new TypeError(`Argument "numbers" must be a non-empty array of numbers`);
  }
  return list;
}

const total = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

/** Evaluates an arithmetic expression like `2 * (3 + 4) ^ 2 / sqrt(16)`. */
export function evaluate(args: Args): Promise<number> {
  return settle(() => {
    const expression = args.expression;
    if (typeof expression !== "string" || expression.trim() === "") {
      throw new TypeError(`Argument "expression" must be a non-empty string`);
    }
    if (expression.length > MAX_EXPRESSION) {
      throw new RangeError(
        `Expression is ${expression.length} characters; the limit is ${MAX_EXPRESSION}`,
      );
    }
    const variables = (args.variables ?? {}) as Record<string, unknown>;
    if (typeof variables !== "object" || Array.isArray(variables)) {
      throw new TypeError(`Argument "variables" must be an object of numbers`);
    }
    for (const [name, value] of Object.entries(variables)) {
      if (typeof value !== "number") throw new TypeError(`Variable "${name}" must be a number`);
    }
    return evaluateExpression(expression, variables as Record<string, number>);
  });
}

/** Adds a list of numbers. */
export function sum(args: Args): Promise<number> {
  return settle(() => {
    return total(numbers(args));
  });
}

/** Arithmetic mean (average) of a list of numbers. */
export function mean(args: Args): Promise<number> {
  return settle(() => {
    const xs = numbers(args);
    return total(xs) / xs.length;
  });
}

/** Median of a list of numbers. */
export function median(args: Args): Promise<number> {
  return settle(() => {
    const xs = [...numbers(args)].sort((a, b) => a - b);
    const mid = xs.length >> 1;
    return xs.length % 2 ? xs[mid] : (xs[mid - 1] + xs[mid]) / 2;
  });
}

/** Count, sum, mean, median, min, max, variance and standard deviation of a list. */
export async function stats(args: Args): Promise<Record<string, number>> {
  const xs = numbers(args);
  const avg = total(xs) / xs.length;
  const variance = total(xs.map((x) => (x - avg) ** 2)) / xs.length;
  return {
    count: xs.length,
    sum: total(xs),
    mean: avg,
    median: await median(args),
    min: Math.min(...xs),
    max: Math.max(...xs),
    variance,
    stddev: Math.sqrt(variance),
  };
}

const NUMBERS = {
  type: "object",
  properties: { numbers: { type: "array", items: { type: "number" }, minItems: 1 } },
  required: ["numbers"],
};

/** Tool descriptions and input schemas. */
export const __meta__ = {
  namespace: "math",
  description: "Math tools: evaluate arithmetic expressions safely, sums, averages and statistics",
  tools: {
    evaluate: {
      description:
        "Evaluate an arithmetic expression (calculate: + - * / % ^, parentheses, sqrt, log, sin, round, min, max, pi, variables)",
      inputSchema: {
        type: "object",
        properties: {
          expression: { type: "string", description: "For example 2 * (3 + x) ^ 2" },
          variables: {
            type: "object",
            additionalProperties: { type: "number" },
            description: "Values of the names used in the expression",
          },
        },
        required: ["expression"],
      },
    },
    sum: { description: "Sum (total) of a list of numbers", inputSchema: NUMBERS },
    mean: { description: "Mean (average) of a list of numbers", inputSchema: NUMBERS },
    median: { description: "Median (middle value) of a list of numbers", inputSchema: NUMBERS },
    stats: {
      description:
        "Descriptive statistics of a list of numbers: count, sum, mean, median, min, max, variance, standard deviation",
      inputSchema: NUMBERS,
    },
  },
};
