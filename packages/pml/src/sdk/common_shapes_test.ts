import { assert, assertEquals } from "../testing/assert.ts";
import { commonCallToolRequest, commonToolResult, isCommonRequest } from "./common_shapes.ts";
import { CallToolRequestSchema, CallToolResultSchema, isJSONRPCRequest } from "./types.ts";

/**
 * The shortcuts against the SDK's own schemas. For every case: when a shortcut answers, the schema
 * accepts the same value and its output is the same, keys, order, prototypes and all. The cases
 * are the common shapes, hand-made odd ones (extra keys, wrong types, prototype keys, numbers vs
 * strings as ids, `_meta`) and thousands made by changing one part of a valid message at a time.
 */

/** Everything about a value the wire or a handler could tell apart, as text. */
function exact(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "number") return Object.is(value, -0) ? "-0" : `n:${value}`;
  if (typeof value !== "object" || value === null) return JSON.stringify(value) ?? String(value);
  const proto = Object.getPrototypeOf(value);
  const kind = Array.isArray(value) ? "array" : proto === Object.prototype ? "object" : "other";
  const keys = Reflect.ownKeys(value).map((k) => String(k));
  const own = value as Record<string, unknown>;
  return `${kind}{${keys.map((k) => `${JSON.stringify(k)}:${exact(own[k])}`).join(",")}}`;
}

/** A small seeded generator (the cases are the same in every run). */
function random(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/** Odd values put in place of a part of a message. */
const ODD: unknown[] = [
  undefined,
  null,
  0,
  -0,
  1,
  -1,
  1.5,
  2 ** 53,
  2 ** 53 - 1,
  -(2 ** 53),
  1e21,
  NaN,
  Infinity,
  "",
  "1",
  "2.0",
  "tools/call",
  "text",
  true,
  false,
  [],
  [1],
  [{ type: "text", text: "x" }],
  {},
  { a: 1 },
  { _meta: {} },
  { __proto__: null, a: 1 },
  JSON.parse('{"__proto__": {"x": 1}}'),
  JSON.parse('{"__proto__": 1}'),
  Object.create({ inherited: 1 }),
  new Date(0),
  new Map(),
  { toString: 1 },
  { constructor: "x" },
  { progressToken: 1 },
  { progressToken: "t" },
  { progressToken: {} },
  { "io.modelcontextprotocol/related-task": { taskId: "t" } },
  { "io.modelcontextprotocol/related-task": { taskId: 1 } },
  { ttl: 1 },
  { ttl: "1" },
];

/** `base` with the value at `path` replaced (or the key removed, for `undefined`/"delete"). */
function variants(base: unknown, rnd: () => number, count: number): unknown[] {
  const paths: string[][] = [];
  const walk = (v: unknown, path: string[]) => {
    paths.push(path);
    if (typeof v === "object" && v !== null) {
      for (const k of Object.keys(v)) walk((v as Record<string, unknown>)[k], [...path, k]);
    }
  };
  walk(base, []);
  const out: unknown[] = [];
  for (let i = 0; i < count; i++) {
    const copy = structuredClone(base);
    const path = paths[Math.floor(rnd() * paths.length)];
    const odd = ODD[Math.floor(rnd() * ODD.length)];
    const action = rnd();
    if (path.length === 0) {
      out.push(odd);
      continue;
    }
    let parent = copy as Record<string, unknown>;
    for (const k of path.slice(0, -1)) parent = parent[k] as Record<string, unknown>;
    const key = path[path.length - 1];
    if (action < 0.15) delete parent[key];
    else if (action < 0.3) {
      // An extra key beside it (a prototype key, `_meta`, or any).
      const extra = ["__proto__", "_meta", "extra", "constructor", "annotations", "task"][
        Math.floor(rnd() * 6)
      ];
      Object.defineProperty(parent, extra, {
        value: odd,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else parent[key] = odd;
    out.push(copy);
  }
  return out;
}

const REQUESTS: unknown[] = [
  { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "a__b", arguments: {} } },
  { jsonrpc: "2.0", id: "x", method: "tools/call", params: { name: "a", arguments: { p: [1] } } },
  { jsonrpc: "2.0", id: 0, method: "tools/call", params: { name: "a" } },
  {
    id: -7,
    jsonrpc: "2.0",
    params: { arguments: { q: { r: 1 } }, name: "z" },
    method: "tools/call",
  },
  { jsonrpc: "2.0", id: 2, method: "tools/list" },
  { jsonrpc: "2.0", id: 3, method: "tools/list", params: {} },
  { jsonrpc: "2.0", id: 4, method: "ping", params: { cursor: "c" } },
  {
    jsonrpc: "2.0",
    id: 5,
    method: "tools/call",
    params: { name: "a", arguments: {}, _meta: { progressToken: 5 } },
  },
  { jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: "a", task: { ttl: 100 } } },
  { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "a", arguments: [] } },
  { jsonrpc: "2.0", method: "notifications/initialized" },
  { jsonrpc: "2.0", id: 8, result: {} },
  { jsonrpc: "2.0", id: 9, error: { code: 1, message: "m" } },
  JSON.parse(
    '{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"a","arguments":' +
      '{"__proto__":{"x":1},"y":2}}}',
  ),
  JSON.parse('{"jsonrpc":"2.0","id":11,"method":"tools/call","__proto__":{"x":1},"params":{}}'),
  {
    jsonrpc: "2.0",
    id: 12,
    method: "tools/call",
    params: {
      name: "a",
      _meta: { progressToken: "p", "io.modelcontextprotocol/related-task": {} },
    },
  },
  {
    jsonrpc: "2.0",
    id: 13,
    method: "tools/call",
    params: { arguments: { x: 1 }, name: "a", _meta: { progressToken: "p" } },
  },
];

const RESULTS: unknown[] = [
  { content: [{ type: "text", text: "x" }] },
  { content: [] },
  { content: [{ type: "text", text: "a" }, { text: "b", type: "text" }], isError: true },
  { structuredContent: { b: 1, a: [2] }, content: [{ type: "text", text: "{}" }] },
  { content: [{ type: "text", text: "x" }], structuredContent: { "2": 1, "1": 2, z: 3 } },
  { content: [{ type: "text", text: "x", annotations: { priority: 1 } }] },
  { content: [{ type: "text", text: "x", _meta: { a: 1 } }] },
  { content: [{ type: "image", data: "aGk=", mimeType: "image/png" }] },
  { content: [{ type: "text", text: "x" }], _meta: { progressToken: 1 } },
  { content: [{ type: "text", text: "x" }], extra: 1 },
  {},
  { isError: false },
  { toolResult: 1 },
  JSON.parse('{"content":[],"structuredContent":{"__proto__":{"x":1},"y":2}}'),
  JSON.parse('{"content":[{"type":"text","text":"x","__proto__":{"type":"text"}}]}'),
];

/** Checks a shortcut against its schema over the cases; returns how many it answered. */
function differential(
  cases: unknown[],
  shortcut: (value: unknown) => unknown,
  schema: { safeParse: (value: unknown) => { success: boolean; data?: unknown } },
): number {
  let answered = 0;
  for (const value of cases) {
    const fast = shortcut(value);
    if (fast === undefined) continue;
    answered++;
    const parsed = schema.safeParse(value);
    assert(parsed.success, `the shortcut took what the schema refuses: ${exact(value)}`);
    assertEquals(exact(fast), exact(parsed.data), `not the schema's output for ${exact(value)}`);
  }
  return answered;
}

const rnd = random(31);
const requestCases = [...REQUESTS, ...ODD, ...REQUESTS.flatMap((r) => variants(r, rnd, 1000))];
const resultCases = [...RESULTS, ...ODD, ...RESULTS.flatMap((r) => variants(r, rnd, 1000))];

Deno.test("isCommonRequest: true only for what JSONRPCRequestSchema accepts, and for the common requests", () => {
  let yes = 0;
  for (const value of requestCases) {
    if (!isCommonRequest(value)) continue;
    yes++;
    assert(isJSONRPCRequest(value), `the shortcut took what the schema refuses: ${exact(value)}`);
  }
  // The hand-made common requests (a progress token in `_meta` too) take the shortcut.
  for (const i of [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]) {
    assert(isCommonRequest(REQUESTS[i]), `not taken: ${exact(REQUESTS[i])}`);
  }
  // Other `_meta`, notifications, responses and prototype keys go to the schema.
  for (const i of [10, 11, 12, 14, 15]) assert(!isCommonRequest(REQUESTS[i]));
  assert(yes > 1000, `only ${yes} of ${requestCases.length} cases took the shortcut`);
});

Deno.test("commonCallToolRequest: CallToolRequestSchema's own output, or no answer", () => {
  const answered = differential(requestCases, commonCallToolRequest, CallToolRequestSchema);
  assertEquals(commonCallToolRequest(REQUESTS[0]), {
    method: "tools/call",
    params: { name: "a__b", arguments: {} },
  });
  // The progress token first, as the schema orders its keys.
  assertEquals(
    exact(commonCallToolRequest(REQUESTS[16])),
    exact({
      method: "tools/call",
      params: { _meta: { progressToken: "p" }, name: "a", arguments: { x: 1 } },
    }),
  );
  // A task-augmented call, other `_meta`, arguments that are no object or hold `__proto__`: the
  // schema's.
  for (const i of [8, 9, 13, 15]) assertEquals(commonCallToolRequest(REQUESTS[i]), undefined);
  assert(answered > 300, `only ${answered} cases answered`);
});

Deno.test("commonToolResult: CallToolResultSchema's own output, or no answer", () => {
  const answered = differential(resultCases, commonToolResult, CallToolResultSchema);
  // Text blocks in the schema's key order, structured content copied in its own order.
  assertEquals(
    exact(commonToolResult(RESULTS[3])),
    exact({ content: [{ type: "text", text: "{}" }], structuredContent: { b: 1, a: [2] } }),
  );
  // Annotations, `_meta`, other blocks, extra keys, defaults and `__proto__`: the schema's.
  for (const i of [5, 6, 7, 8, 9, 10, 11, 12, 13, 14]) {
    assertEquals(commonToolResult(RESULTS[i]), undefined, exact(RESULTS[i]));
  }
  assert(answered > 300, `only ${answered} cases answered`);
});

Deno.test("the shortcuts do not keep the caller's objects: arguments and structured content are copies", () => {
  const args = { a: { deep: 1 } };
  const request = commonCallToolRequest({
    jsonrpc: "2.0",
    id: 1,
    method: "tools/call",
    params: { name: "t", arguments: args },
  })!;
  assert(request.params.arguments !== args && request.params.arguments!.a === args.a);
  const structured = { n: 1 };
  const result = commonToolResult({ content: [], structuredContent: structured })!;
  assert(result.structuredContent !== structured);
  assertEquals(result.structuredContent, structured);
});
