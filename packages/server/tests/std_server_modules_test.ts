/** The server-side std modules `registry/std/{json,math,text}.ts`, called directly. */
import assert from "node:assert/strict";
import * as json from "../../../registry/std/json.ts";
import * as math from "../../../registry/std/math.ts";
import * as text from "../../../registry/std/text.ts";

Deno.test("json: query by dotted path, brackets, quoted keys and JSON Pointer; default", async () => {
  const value = { a: { "b.c": [10, { d: "x" }] }, "x/y": 1 };
  assert.equal(await json.query({ value, path: 'a["b.c"][1].d' }), "x");
  assert.equal(await json.query({ value, path: "/a/b.c/0" }), 10);
  assert.equal(await json.query({ value, path: "/x~1y" }), 1);
  assert.deepEqual(await json.query({ text: "[1,2]", path: "$" }), [1, 2]);
  assert.equal(await json.query({ value, path: "a.zz", default: 0 }), 0);
  await assert.rejects(() => json.query({ value, path: "a.zz" }), /Path "a.zz" not found/);
  await assert.rejects(() => json.query({ value: {}, path: "constructor" }), /not found/);
  assert.equal(await json.stringify({ value: { a: 1 }, indent: 2 }), '{\n  "a": 1\n}');
  await assert.rejects(() => json.stringify({ value: undefined }), /not JSON-serialisable/);
});

Deno.test("math: precedence, associativity, functions, variables, errors", async () => {
  const cases: [string, number][] = [
    ["1 + 2 * 3", 7],
    ["(1 + 2) * 3", 9],
    ["2 ^ 3 ^ 2", 512],
    ["-2 ^ 2", -4],
    ["2 ** -1", 0.5],
    ["10 % 4 - 7 / 2", -1.5],
    ["max(1, 5, 3) + min(4, 2)", 7],
    ["round(pi, 2)", 3.14],
    ["log(8, 2)", 3],
    ["1.5e3 + .5", 1500.5],
  ];
  for (const [expression, expected] of cases) {
    assert.equal(await math.evaluate({ expression }), expected, expression);
  }
  assert.equal(await math.evaluate({ expression: "x * y", variables: { x: 3, y: 4 } }), 12);
  await assert.rejects(() => math.evaluate({ expression: "1 +" }), /expected a value/);
  await assert.rejects(() => math.evaluate({ expression: "(1" }), /expected \)/);
  await assert.rejects(() => math.evaluate({ expression: "alert(1)" }), /Unknown function/);
  await assert.rejects(() => math.evaluate({ expression: "1 2" }), /unexpected "2"/);
  assert.deepEqual(await math.stats({ numbers: [2, 4, 4, 4, 5, 5, 7, 9] }), {
    count: 8,
    sum: 40,
    mean: 5,
    median: 4.5,
    min: 2,
    max: 9,
    variance: 4,
    stddev: 2,
  });
  await assert.rejects(() => math.sum({ numbers: [] }), /non-empty array/);
});

Deno.test("text: count, replace, split, cases, slugify, truncate", async () => {
  assert.deepEqual(await text.count({ text: "héllo wörld\nbye" }), {
    characters: 15,
    words: 3,
    lines: 2,
    bytes: 17,
  });
  assert.deepEqual(await text.replace({ text: "$a $a", search: "$a", replacement: "$&" }), {
    text: "$& $&",
    replacements: 2,
  });
  assert.deepEqual(
    await text.replace({ text: "aaa", search: "a", replacement: "b", all: false }),
    { text: "baa", replacements: 1 },
  );
  assert.deepEqual(
    await text.split({ text: " a, ,b ", separator: ",", trim: true, removeEmpty: true }),
    ["a", "b"],
  );
  const conversions: [string, string][] = [
    ["camel", "xmlHttpRequestId"],
    ["pascal", "XmlHttpRequestId"],
    ["snake", "xml_http_request_id"],
    ["kebab", "xml-http-request-id"],
    ["constant", "XML_HTTP_REQUEST_ID"],
  ];
  for (const [to, expected] of conversions) {
    assert.equal(await text.convert_case({ text: "XMLHttpRequest id", to }), expected, to);
  }
  assert.equal(await text.convert_case({ text: "the quick fox", to: "title" }), "The Quick Fox");
  await assert.rejects(() => text.convert_case({ text: "x", to: "weird" }), /Unknown case/);
  assert.equal(await text.slugify({ text: "  Ça va? Très bien!  " }), "ca-va-tres-bien");
  assert.equal(await text.truncate({ text: "abcdef", length: 4 }), "abc…");
  assert.equal(await text.truncate({ text: "abc", length: 4 }), "abc");
});
