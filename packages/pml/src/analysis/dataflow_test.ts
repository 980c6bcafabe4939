/** `dependsOn`: data flow and control flow from earlier tool results into later calls. */
import { deepStrictEqual, equal, ok } from "node:assert/strict";
import { analyze, depsByTool } from "./testdata/helpers.ts";
import { SNIPPET_50 } from "./testdata/snippets.ts";

Deno.test("independent calls do not depend on each other", async () => {
  const a = await analyze(`
    const a = await mcp.fs.read_file({ path: "a" });
    const b = await mcp.fs.read_file({ path: "b" });
    return [a, b];`);
  deepStrictEqual(a.tasks.map((t) => t.dependsOn), [[], []]);
});

Deno.test("dependency through a chain of variables, members, destructuring and literals", async () => {
  const a = await analyze(`
    const raw = await mcp.fs.read_file({ path: "cfg.json" });
    const text = raw.content;
    let trimmed: string;
    trimmed = text.trim();
    const wrapped = { inner: { value: trimmed }, other: 1 };
    const { inner: { value } } = wrapped;
    const list = [value, "x"];
    const [first] = list;
    await mcp.json.parse({ text: \`\${first}!\` });
    await mcp.json.stringify({ value: wrapped.other });`);
  deepStrictEqual(depsByTool(a), {
    "fs:read_file": [],
    "json:parse": ["fs:read_file"],
    "json:stringify": [],
  });
});

Deno.test("a call nested in another call's arguments comes first and is a dependency", async () => {
  const a = await analyze(`return await mcp.json.parse({ text: await mcp.fs.read_file({}) });`);
  deepStrictEqual(a.tasks.map((t) => [t.id, t.tool, t.dependsOn]), [
    ["t1", "fs:read_file", []],
    ["t2", "json:parse", ["t1"]],
  ]);
});

Deno.test("Promise.all: calls in the same array are independent; results flow per element", async () => {
  const a = await analyze(`
    const [a, b] = await Promise.all([
      mcp.fs.read_file({ path: "a" }),
      mcp.tavily.search({ query: "b" }),
      mcp.math.add({ a: 1, b: 2 }),
    ]);
    await mcp.json.parse({ text: a });
    await mcp.text.upper({ text: b.results });`);
  deepStrictEqual(depsByTool(a), {
    "fs:read_file": [],
    "tavily:search": [],
    "math:add": [],
    "json:parse": ["fs:read_file"],
    "text:upper": ["tavily:search"],
  });
});

Deno.test("conditional dependence: if/else, ternary, logical operators, switch", async () => {
  const a = await analyze(`
    const st = await mcp.git.status({});
    if (st.changed.length > 0) await mcp.git.commit({ message: "m" });
    else await mcp.slack.post_message({ text: "clean" });
    const x = await mcp.math.random({});
    const y = x > 0.5 ? await mcp.text.upper({ text: "a" }) : null;
    x > 0.9 && await mcp.text.lower({ text: "b" });
    const mode = await mcp.pml.mode({});
    switch (mode.kind) { case "a": await mcp.exa.search({}); break; }
    await mcp.json.stringify({});`);
  deepStrictEqual(depsByTool(a), {
    "git:status": [],
    "git:commit": ["git:status"],
    "slack:post_message": ["git:status"],
    "math:random": [],
    "text:upper": ["math:random"],
    "text:lower": ["math:random"],
    "pml:mode": [],
    "exa:search": ["pml:mode"],
    "json:stringify": [],
  });
});

Deno.test("an early return makes the rest of the body depend on its condition", async () => {
  const a = await analyze(`
    const probe = await mcp.fs.exists({ path: "x" });
    const skip = !probe.exists;
    if (skip) return null;
    return await mcp.fs.read_file({ path: "x" });`);
  deepStrictEqual(depsByTool(a), { "fs:exists": [], "fs:read_file": ["fs:exists"] });
});

Deno.test("a value assigned under a condition carries the condition", async () => {
  const a = await analyze(`
    const st = await mcp.git.status({});
    let committed = false;
    if (st.dirty) committed = true;
    await mcp.slack.post_message({ committed });`);
  deepStrictEqual(depsByTool(a)["slack:post_message"], ["git:status"]);
});

Deno.test("loops: the iterable guards the body and taints the loop variable", async () => {
  const a = await analyze(`
    const dir = await mcp.fs.list_directory({ path: "." });
    const names = [];
    for (const e of dir.entries) names.push(e.name);
    await mcp.json.stringify({ names });
    const n = await mcp.math.random({});
    for (let i = 0; i < n; i++) await mcp.fs.stat({ i: 0 });`);
  deepStrictEqual(depsByTool(a), {
    "fs:list_directory": [],
    "json:stringify": ["fs:list_directory"],
    "math:random": [],
    "fs:stat": ["math:random"],
  });
});

Deno.test("callbacks receive the receiver's taint; their results flow out", async () => {
  const a = await analyze(`
    const listing = await mcp.fs.list_directory({});
    const contents = await Promise.all(
      listing.files.map((f) => mcp.fs.read_file({ path: f })),
    );
    return await mcp.text.join({ parts: contents });`);
  deepStrictEqual(depsByTool(a), {
    "fs:list_directory": [],
    "fs:read_file": ["fs:list_directory"],
    "text:join": ["fs:read_file", "fs:list_directory"].sort(),
  });
  ok(a.tasks[1].inLoop);
});

Deno.test("helper functions: call-site arguments flow into their tasks, results flow out", async () => {
  const a = await analyze(`
    const cfg = await mcp.json.parse({ text: "{}" });
    const text = await load(cfg.path);
    await mcp.text.upper({ text });
    async function load(path: string) {
      return await mcp.fs.read_file({ path });
    }
    const again = await load(text);`);
  deepStrictEqual(depsByTool(a), {
    "json:parse": [],
    "fs:read_file": ["json:parse"],
    // A helper's result carries its return values and (conservatively) its arguments.
    "text:upper": ["json:parse", "fs:read_file"],
  });
  // `load(text)` feeds the task's own result back: no self-dependency, no cycle.
  const read = a.tasks.find((t) => t.tool === "fs:read_file")!;
  ok(!read.dependsOn.includes(read.id));
});

Deno.test("a helper called in a loop marks its tasks inLoop", async () => {
  const a = await analyze(`
    const get = (p: string) => mcp.fs.read_file({ path: p });
    for (const p of ["a", "b"]) await get(p);`);
  deepStrictEqual(a.tasks.map((t) => [t.tool, t.inLoop]), [["fs:read_file", true]]);
});

Deno.test("catch blocks depend on the calls of their try block", async () => {
  const a = await analyze(`
    let text;
    try { text = await mcp.fs.read_file({ path: "a" }); }
    catch { await mcp.slack.post_message({ text: "missing" }); }
    await mcp.math.add({});`);
  deepStrictEqual(depsByTool(a), {
    "fs:read_file": [],
    "slack:post_message": ["fs:read_file"],
    "math:add": [],
  });
});

Deno.test("realistic 50-line snippet: tasks, loops and dependencies", async () => {
  equal(SNIPPET_50.split("\n").length, 50);
  const a = await analyze(SNIPPET_50);
  deepStrictEqual(a.tasks.map((t) => [t.id, t.tool, t.line, t.inLoop, t.dependsOn]), [
    ["t1", "filesystem:list_directory", 8, false, []],
    ["t2", "filesystem:read_file", 13, true, ["t1"]],
    ["t3", "json:parse", 14, true, ["t1", "t2"]],
    ["t4", "tavily:search", 25, true, ["t1", "t3"]],
    ["t5", "text:summarize", 37, false, ["t1", "t3", "t4"]],
    ["t6", "filesystem:write_file", 40, false, ["t1", "t3", "t4", "t5"]],
    ["t7", "git:status", 41, false, []],
    ["t8", "git:commit", 44, false, ["t7"]],
    ["t9", "slack:post_message", 48, false, ["t5", "t7"]],
  ]);
  deepStrictEqual(a.dynamic, []);
  equal(a.routing, "client");
});
