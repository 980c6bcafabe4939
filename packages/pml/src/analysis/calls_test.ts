/** Finding `mcp.ns.action()` call sites in every supported form, and reporting dynamic ones. */
import { deepStrictEqual, equal, match, ok } from "node:assert/strict";
import { analyze } from "./testdata/helpers.ts";

const toolsOf = async (code: string) => (await analyze(code)).tasks.map((t) => t.tool);

Deno.test("direct call: tool id, 1-based position, not in a loop", async () => {
  const a = await analyze(`const x = 1;\n  return await mcp.filesystem.read_file({ path: "a" });`);
  deepStrictEqual(a.tasks, [{
    id: "t1",
    tool: "filesystem:read_file",
    routing: "client",
    line: 2,
    column: 16,
    dependsOn: [],
    inLoop: false,
    args: [{ path: "a" }],
  }]);
  deepStrictEqual(a.dynamic, []);
});

Deno.test("literal arguments are known before the code runs; anything computed is not", async () => {
  const argsOf = async (call: string, before = "") =>
    (await analyze(`let v = 1; ${before}\nawait ${call};`)).tasks[0].args;
  deepStrictEqual(
    await argsOf(
      `mcp.a.b({ s: "x", t: \`y\`, n: -2.5, ok: true, none: null, list: [1, "z", { "k-1": 0 }] } as const)`,
    ),
    [{ s: "x", t: "y", n: -2.5, ok: true, none: null, list: [1, "z", { "k-1": 0 }] }],
  );
  deepStrictEqual(await argsOf(`mcp.a.b({})`), [{}]);
  // const names bound to what is known, and the elements of a literal array looped over.
  deepStrictEqual(await argsOf(`mcp.a.b({ path, n })`, `const path = "a.txt"; const n = 2;`), [
    { path: "a.txt", n: 2 },
  ]);
  deepStrictEqual(
    (await analyze(`const dir = "src"; const files = ["a", "b"];
      for (const f of files) await mcp.fs.read({ path: \`\${dir}/\${f}.ts\` });`)).tasks[0].args,
    [{ path: "src/a.ts" }, { path: "src/b.ts" }],
  );
  for (
    const [call, before] of [
      ["mcp.a.b({ v })", ""], // `let`: may change
      ["mcp.a.b({ n: v })", ""],
      ["mcp.a.b({ p })", "const p = Math.random();"],
      ["mcp.a.b({ p })", "const { p } = { p: 1 };"], // destructured: not followed
      ["mcp.a.b({ ...{ n: 1 } })", ""],
      ["mcp.a.b({ [`k${v}`]: 1 })", ""],
      ["mcp.a.b({ t: `x${v}` })", ""],
      ["mcp.a.b({ t: `x${o}` })", "const o = { a: 1 };"], // not a string once interpolated
      ["mcp.a.b({ f() {} })", ""],
      ["mcp.a.b({ n: NaN })", ""],
      ["mcp.a.b({ n: -0 })", ""],
      ["mcp.a.b({ n: undefined })", ""],
      ["mcp.a.b({ __proto__: { polluted: 1 } })", ""],
      ["mcp.a.b({ k: 1, k: 2 })", ""],
      ["mcp.a.b({ list: [1, , 2] })", ""],
      ["mcp.a.b([1])", ""], // not an object
      ['mcp.a.b("x")', ""],
      ["mcp.a.b({ n: 1 }, 2)", ""], // more than the one argument the call sends
      ["mcp.a.b()", ""],
    ]
  ) equal(await argsOf(call, before), undefined, `${before} ${call}`);
  // More than 16 combinations: none is known.
  const many = JSON.stringify(Array.from({ length: 17 }, (_, i) => `f${i}`));
  equal(
    (await analyze(`for (const f of ${many}) await mcp.fs.read({ path: f });`)).tasks[0].args,
    undefined,
  );
  // A `let` loop variable may be reassigned in the body.
  equal(
    (await analyze(`for (let f of ["a"]) await mcp.fs.read({ path: f });`)).tasks[0].args,
    undefined,
  );
});

Deno.test("the callback of map and the like takes the elements of a literal array as its first parameter", async () => {
  const argsOf = async (code: string) => (await analyze(code)).tasks[0].args;
  for (
    const code of [
      `const files = ["a", "b"]; await Promise.all(files.map((f) => mcp.fs.read({ path: f })));`,
      `await Promise.all(["a", "b"].map(async function (f, i) { return await mcp.fs.read({ path: f }); }));`,
      `const files = ["a", "b"]; files.forEach((f) => { mcp.fs.read({ path: \`\${f}\` }); });`,
      `const files = ["a", "b"]; await Promise.all(files.flatMap((f) => [mcp.fs.read({ path: f })]));`,
    ]
  ) deepStrictEqual(await argsOf(code), [{ path: "a" }, { path: "b" }], code);
  for (
    const code of [
      // The receiver is computed, or may change.
      `const files = ["a", "b"]; await Promise.all(files.filter((f) => f).map((f) => mcp.fs.read({ path: f })));`,
      `let files = ["a", "b"]; await Promise.all(files.map((f) => mcp.fs.read({ path: f })));`,
      // Not the element: the index, the array, an accumulator, a second callback.
      `await Promise.all(["a", "b"].map((f, i) => mcp.fs.read({ path: i })));`,
      `await Promise.all(["a", "b"].map((f, i, all) => mcp.fs.read({ path: all })));`,
      `await ["a", "b"].reduce(async (acc, f) => mcp.fs.read({ path: acc }), "x");`,
      `const files = ["a"]; files.map((x) => x, (f) => mcp.fs.read({ path: f }));`,
      // Not an array method: a function of one's own.
      `const each = (xs, fn) => xs.forEach(fn); each(["a"], (f) => mcp.fs.read({ path: f }));`,
      // Reassigned in the callback before the call.
      `await Promise.all(["a", "b"].map((f) => { f = f + ".txt"; return mcp.fs.read({ path: f }); }));`,
      // Destructured: not followed.
      `await Promise.all([{ p: "a" }].map(({ p }) => mcp.fs.read({ path: p })));`,
    ]
  ) equal(await argsOf(code), undefined, code);
});

Deno.test("aliases of mcp and of a namespace", async () => {
  deepStrictEqual(await toolsOf(`const m = mcp; await m.fs.read_file({});`), ["fs:read_file"]);
  deepStrictEqual(
    await toolsOf(`const fs = mcp.filesystem; const m = mcp; const g = m.git;
      await fs.read_file({}); await g.status({});`),
    ["filesystem:read_file", "git:status"],
  );
  deepStrictEqual(await toolsOf(`const alias = mcp; const again = alias; again.a.b();`), ["a:b"]);
});

Deno.test("destructuring: plain, renamed, nested, with defaults", async () => {
  const code = `
    const { read_file, write_file: wf = null } = mcp.filesystem;
    const { git: { commit }, json } = mcp;
    await read_file({ path: "a" });
    await wf({ path: "b" });
    await commit({});
    await json.parse({ text: "{}" });`;
  deepStrictEqual(await toolsOf(code), [
    "filesystem:read_file",
    "filesystem:write_file",
    "git:commit",
    "json:parse",
  ]);
});

Deno.test("calls in loops are one task per call site, flagged inLoop", async () => {
  const a = await analyze(`
    for (const p of ["a", "b"]) await mcp.fs.read_file({ path: p });
    for (let i = 0; i < 3; i++) await mcp.fs.stat({ i });
    while (await mcp.queue.pending({})) await mcp.queue.pop({});
    do { await mcp.math.random({}); } while (false);
    for (const k in {}) mcp.x.y({ k });
    await mcp.fs.write_file({ path: "done" });`);
  deepStrictEqual(a.tasks.map((t) => [t.tool, t.inLoop]), [
    ["fs:read_file", true],
    ["fs:stat", true],
    ["queue:pending", true],
    ["queue:pop", true],
    ["math:random", true],
    ["x:y", true],
    ["fs:write_file", false],
  ]);
});

Deno.test("calls in conditionals, callbacks and nested functions", async () => {
  const a = await analyze(`
    if (Math.random() > 0.5) { await mcp.a.one({}); } else { await mcp.a.two({}); }
    const v = cond ? await mcp.b.three({}) : ok && await mcp.b.four({});
    const all = await Promise.all(files.map(async (f) => await mcp.c.five({ f })));
    async function helper(x) { return mcp.d.six({ x }); }
    const run = () => mcp.d.seven({});
    class K { async m() { return mcp.e.eight({}); } }
    (async () => { await mcp.f.nine({}); })();`);
  deepStrictEqual(a.tasks.map((t) => [t.tool, t.inLoop]), [
    ["a:one", false],
    ["a:two", false],
    ["b:three", false],
    ["b:four", false],
    ["c:five", true],
    ["d:six", false],
    ["d:seven", false],
    ["e:eight", false],
    ["f:nine", false],
  ]);
});

Deno.test("optional chaining, string and template keys, TypeScript wrappers", async () => {
  deepStrictEqual(
    await toolsOf(`
      await mcp.fs?.read_file?.({});
      await mcp?.git.status();
      await mcp["json"]["parse"]({ text: "1" });
      await mcp[\`math\`][\`add\`]({ a: 1 });
      await (mcp as any).text.upper({});
      await mcp.shell!.exec({ cmd: "ls" });
      await (mcp.exa satisfies unknown as typeof mcp.exa).search({});
      await globalThis.mcp.slack.post({});
      await this.mcp.github.search({});`),
    [
      "fs:read_file",
      "git:status",
      "json:parse",
      "math:add",
      "text:upper",
      "shell:exec",
      "exa:search",
      "slack:post",
      "github:search",
    ],
  );
});

Deno.test("type-only code and shadowing are not calls", async () => {
  const a = await analyze(`
    type Fs = typeof mcp.filesystem;
    interface I { run(): ReturnType<typeof mcp.git.status> }
    const fs = mcp.filesystem;
    function local(fs: { read_file(): void }) { return fs.read_file(); }
    const inner = (mcp: { a: { b(): void } }) => mcp.a.b();
    function own() { return arguments.length; }
    if (typeof mcp.git.status === "function") await fs.read_file({});`);
  deepStrictEqual(a.tasks.map((t) => t.tool), ["filesystem:read_file"]);
  deepStrictEqual(a.dynamic, []);
});

Deno.test("dynamic forms are reported with position and reason, and route to client", async () => {
  const cases: [string, RegExp][] = [
    [`const ns = "json"; await mcp[ns].parse({});`, /computed namespace name on "mcp"/],
    [`const x = "parse"; await mcp.json[x]({});`, /computed action name on "mcp.json"/],
    [`await mcp[\`js\${"on"}\`].parse({});`, /computed namespace name/],
    [`await helper(mcp);`, /"mcp" is used as a value/],
    [`const j = mcp.json; await run(j);`, /"mcp.json" is used as a value/],
    [`await Promise.all(["1"].map(mcp.json.parse));`, /tool "json:parse" is used as a value/],
    [`mcp = {};`, /"mcp" is reassigned/],
    [`let m = mcp; m = other; await m.json.parse({});`, /alias "m" of "mcp" is reassigned/],
    [`mcp.json.parse = () => 1;`, /assignment to a property of "mcp.json"/],
    [`const { ...rest } = mcp.json;`, /rest element/],
    [`const [a] = mcp;`, /destructuring of "mcp"/],
    [`await mcp.json.parse.call(null, {});`, /property "call" of tool "json:parse"/],
    [`await mcp.json({});`, /"mcp.json" is called itself/],
    [`await mcp["my ns"].parse({});`, /"my ns:parse" is not a valid tool id/],
    [`await globalThis[key].json.parse({});`, /computed property of "globalThis"/],
    [`eval("mcp.json.parse({})");`, /"eval" runs code/],
    [`return { m: mcp };`, /"mcp" is used as a value/],
    [`await arguments[0].json.parse({});`, /"arguments" of the code's function/],
    [`const f = () => arguments; f();`, /"arguments" of the code's function/],
    [`await this[k].json.parse({});`, /computed property of "this"/],
  ];
  for (const [code, reason] of cases) {
    const a = await analyze(code);
    equal(a.dynamic.length, 1, `one dynamic entry for ${code}: ${JSON.stringify(a.dynamic)}`);
    match(a.dynamic[0].reason, reason, code);
    ok(a.dynamic[0].line === 1 && a.dynamic[0].column >= 1, code);
    equal(a.routing, "client", code);
  }
});

Deno.test("a dynamic form next to resolvable calls keeps the calls and reports the rest", async () => {
  const a = await analyze(`
    const r = await mcp.json.parse({ text: "{}" });
    const out = await mcp[r.ns][r.action]({});
    return await mcp.math.add({ a: out });`);
  deepStrictEqual(a.tasks.map((t) => t.tool), ["json:parse", "math:add"]);
  deepStrictEqual(a.serverTools, ["json:parse", "math:add"]);
  deepStrictEqual(a.clientTools, []);
  deepStrictEqual(a.dynamic, [{ line: 3, column: 23, reason: `computed namespace name on "mcp"` }]);
  equal(a.routing, "client");
});
