/**
 * Read-ahead of `pml:execute` (read_ahead.ts): the sandbox protocol with a real exec sandbox, and
 * through the gateway what code sees (same values, same errors, same report) and when nothing may
 * be read ahead (a write in the code, a tool the user is asked about), and a read that needs the
 * human (a `.env` file) asked as the same call made live.
 */
import { join } from "node:path";
import { analyzeCode } from "../analysis/mod.ts";
import { NOT_ASKED } from "../gateway/call_relay.ts";
import { SandboxProcess } from "../sandbox/sandbox_process.ts";
import { AHEAD_PUSH_CHARS } from "../sandbox/call_relay.ts";
import { assertEquals, assertMatch } from "../testing/assert.ts";
import { FILESYSTEM_ALLOWED, gatewayFor, tempWorkspace } from "../testing/workspace.ts";
import { execute } from "./_test_helpers.ts";
import { aheadKey, readsAhead } from "./read_ahead.ts";
import { execSandboxSpec } from "./warm_pool.ts";

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("read-ahead protocol: a listed call takes its outcome once, without an mcp round trip", async () => {
  const proc = new SandboxProcess(execSandboxSpec());
  try {
    await proc.ready;
    const live: unknown[] = [];
    const taken: number[] = [];
    const result = await proc.call(
      {
        ns: "exec",
        action: "run",
        args: {
          code: `
            const a = await mcp.fs.read({ path: "a", opts: { y: 2, x: 1 } }); // keys in another order
            const b = await mcp.fs.read({ path: "b" }); // not listed
            const again = await mcp.fs.read({ opts: { x: 1, y: 2 }, path: "a" }); // taken already
            let failed;
            try { await mcp.fs.read({ path: "gone" }); } catch (e) { failed = e.message + "/" + e.code; }
            await new Promise((r) => setTimeout(r, 100)); // the large outcome is held by now
            const large = await Promise.race([ // fails instead of hanging if it is never sent
              mcp.fs.read({ path: "large" }),
              new Promise((_, no) => setTimeout(() => no(new Error("held, never sent")), 10000)),
            ]);
            return [a, b, again, failed, large.length];`,
        },
        workspace: "/",
      },
      {
        onMcp: (tool, args) => {
          live.push([tool, args]);
          return Promise.resolve(`live ${(args as { path: string }).path}`);
        },
        ahead: {
          keys: [
            aheadKey("fs:read", { path: "a", opts: { x: 1, y: 2 } }),
            aheadKey("fs:read", { path: "gone" }),
            aheadKey("fs:read", { path: "never" }),
            aheadKey("fs:read", { path: "large" }),
            aheadKey("fs:read", { path: "large, never" }),
          ],
          outcomes: [
            delay(100).then(() => "ahead a"), // arrives after the code asked for it
            Promise.reject(Object.assign(new Error("no such file"), { code: "TOOL_ERROR" })),
            Promise.resolve("ahead never"),
            // Over AHEAD_PUSH_CHARS: sent only once the code takes it.
            Promise.resolve("x".repeat(AHEAD_PUSH_CHARS + 1)),
            Promise.resolve("y".repeat(AHEAD_PUSH_CHARS + 1)),
          ],
          onTaken: (index) => taken.push(index),
        },
      },
    );
    assertEquals(result, [
      "ahead a",
      "live b",
      "live a",
      "no such file/TOOL_ERROR",
      AHEAD_PUSH_CHARS + 1,
    ]);
    assertEquals(taken, [0, 1, 3]);
    assertEquals(live, [
      ["fs:read", { path: "b" }],
      ["fs:read", { opts: { x: 1, y: 2 }, path: "a" }],
    ]);
  } finally {
    await proc.close();
  }
});

Deno.test("read-ahead plan: only code that reads with tools the user allows, literal arguments only", async () => {
  const deps = {
    readsOnly: (id: string) => id === "filesystem:read_file",
    permissionOf: (
      id: string,
    ) => (id === "filesystem:read_file" ? "allow" as const : "ask" as const),
  };
  const plan = async (code: string) => {
    const a = await analyzeCode(code, { routeOf: () => "client" });
    if (!a.ok) throw new Error(a.error.message);
    return readsAhead(a, deps);
  };
  assertEquals(
    await plan(`const p = "b.txt";
      if (Math.random() > 2) await mcp.filesystem.read_file({ path: "a.txt", head: 2 });
      await mcp.filesystem.read_file({ path: p });
      for (const f of ["c", "d"]) await mcp.filesystem.read_file({ path: f + ".txt" });
      await mcp.filesystem.read_file({ path: String(Math.random()) });`),
    [
      { tool: "filesystem:read_file", args: { path: "a.txt", head: 2 } },
      { tool: "filesystem:read_file", args: { path: "b.txt" } },
    ],
  );
  // The callback of a `map` over a literal list: one read per element.
  assertEquals(
    await plan(`const files = ["a.txt", "b.txt"];
      return await Promise.all(files.map((f) => mcp.filesystem.read_file({ path: f })));`),
    [
      { tool: "filesystem:read_file", args: { path: "a.txt" } },
      { tool: "filesystem:read_file", args: { path: "b.txt" } },
    ],
  );
  // A tool that writes, or one the user is asked about, anywhere in the code: nothing ahead.
  assertEquals(
    await plan(`await mcp.filesystem.read_file({ path: "a.txt" });
      await mcp.filesystem.write_file({ path: "a.txt", content: "x" });`),
    [],
  );
  // A dynamic use of mcp could be any tool.
  assertEquals(
    await plan(
      `await mcp.filesystem.read_file({ path: "a.txt" }); const t = "x"; await mcp.filesystem[t]({});`,
    ),
    [],
  );
});

Deno.test("pml:execute read-ahead: values, errors and the calls report are those of the calls the code made", async () => {
  await using ws = tempWorkspace(FILESYSTEM_ALLOWED);
  ws.write("a.txt", "alpha");
  ws.write("b.txt", "beta");
  await using g = await gatewayFor(ws);
  const body = await execute(
    g.client,
    `const a = await mcp.filesystem.read_file({ path: "a.txt" });
     const again = await mcp.filesystem.read_file({ path: "a.txt" });
     if (a === "never") await mcp.filesystem.read_file({ path: "b.txt" });
     const errors = [];
     for (const path of ["../outside.txt", "missing.txt"]) {
       try { await mcp.filesystem.read_file({ path }); } catch (e) { errors.push(e.code + " " + e.message); }
     }
     const literal = [];
     try { await mcp.filesystem.read_file({ path: "../outside.txt" }); } catch (e) { literal.push(e.code + " " + e.message); }
     try { await mcp.filesystem.read_file({ path: "missing.txt" }); } catch (e) { literal.push(e.code + " " + e.message); }
     return { a, again, errors, literal };`,
  );
  assertEquals(body.status, "success", body.message);
  const result = body.result as { a: string; again: string; errors: string[]; literal: string[] };
  assertEquals([result.a, result.again], ["alpha", "alpha"]);
  // A read started ahead fails as the same call made live does.
  assertEquals(result.literal, result.errors);
  assertMatch(result.errors[0], /outside/);
  // The read of the branch not taken is not a call of the code.
  assertEquals(body.calls!.length, 6);
});

Deno.test("pml:execute read-ahead: code that writes reads what it wrote", async () => {
  await using ws = tempWorkspace(FILESYSTEM_ALLOWED);
  ws.write("a.txt", "old");
  await using g = await gatewayFor(ws);
  const body = await execute(
    g.client,
    `await mcp.filesystem.write_file({ path: "a.txt", content: "new" });
     return await mcp.filesystem.read_file({ path: "a.txt" });`,
  );
  assertEquals(body.result, "new");
});

Deno.test("pml:execute read-ahead: a read the user is asked about is asked, once, when the code makes it", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: [], ask: ["filesystem:read_file"], deny: [] },
  });
  ws.write("a.txt", "alpha");
  const asked: string[] = [];
  await using g = await gatewayFor(ws, { elicit: (m) => (asked.push(m), "yes") });
  const body = await execute(g.client, `return await mcp.filesystem.read_file({ path: "a.txt" });`);
  assertEquals(body.result, "alpha");
  assertEquals(asked.length, 1);
});

Deno.test("pml:execute read-ahead: a read that does not answer fails with RPC_TIMEOUT, as made live", async () => {
  await using ws = tempWorkspace(FILESYSTEM_ALLOWED);
  // A named pipe nobody writes: reading it blocks.
  const made = await new Deno.Command("mkfifo", { args: [`${ws.dir}/pipe`] }).output();
  assertEquals(made.success, true);
  await using g = await gatewayFor(ws, { execute: { rpcTimeoutMs: 300 } });
  const body = await execute(
    g.client,
    `const codes = [];
     try { await mcp.filesystem.read_file({ path: "pipe" }); } catch (e) { codes.push(e.code); }
     const path = ["pi", "pe"].join("");
     try { await mcp.filesystem.read_file({ path }); } catch (e) { codes.push(e.code); }
     return codes;`,
  );
  assertEquals(body.result, ["RPC_TIMEOUT", "RPC_TIMEOUT"]);
});

Deno.test("pml:execute read-ahead: a loop or a map over a literal list of files reads each, in order", async () => {
  await using ws = tempWorkspace(FILESYSTEM_ALLOWED);
  for (const n of [1, 2, 3]) ws.write(`f${n}.txt`, `file ${n}`);
  await using g = await gatewayFor(ws);
  const body = await execute(
    g.client,
    `const dir = ".";
     const out = [];
     for (const n of [1, 2, 3, 2]) out.push(await mcp.filesystem.read_file({ path: \`\${dir}/f\${n}.txt\` }));
     return out;`,
  );
  assertEquals(body.result, ["file 1", "file 2", "file 3", "file 2"]);
  assertEquals(body.calls!.length, 4);
  // The same through the callback of a `map`, all at once: each result goes to its own element.
  const mapped = await execute(
    g.client,
    `const files = ["f3.txt", "f1.txt", "f2.txt", "f1.txt"];
     return await Promise.all(files.map((f) => mcp.filesystem.read_file({ path: f })));`,
  );
  assertEquals(mapped.result, ["file 3", "file 1", "file 2", "file 1"]);
  assertEquals(mapped.calls!.length, 4);
});

Deno.test("pml:execute read-ahead: a read that needs the human is asked, or pauses the run, as the same call made live", async () => {
  await using ws = tempWorkspace(FILESYSTEM_ALLOWED);
  ws.write(".env", "API_KEY=secret-in-dotenv");
  Deno.symlinkSync(".env", join(ws.dir, "config.txt")); // a .env file under another name
  const ahead = `const text = await mcp.filesystem.read_file({ path: "config.txt" });
     return text.length;`;
  // The same call with an argument the analysis cannot know: made live, never read ahead.
  const live = `const path = ["config", "txt"].join(".");
     const text = await mcp.filesystem.read_file({ path });
     return text.length;`;
  const shape = (body: { status: string; code?: string; result?: unknown; description?: string }) =>
    JSON.stringify([body.status, body.code, body.result, body.description]).replace(
      /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g,
      "<id>",
    );

  // A client that elicits: asked in-line once, and the answer applies.
  for (const decision of ["yes", "no"] as const) {
    const asked: string[] = [];
    await using g = await gatewayFor(ws, { elicit: (m) => (asked.push(m), decision) });
    const a = await execute(g.client, ahead);
    const l = await execute(g.client, live);
    assertEquals(shape(a), shape(l), decision);
    assertEquals(asked.length, 2, `one question per execution (${decision})`);
    if (decision === "yes") assertEquals(a.result, "API_KEY=secret-in-dotenv".length);
    else assertEquals(JSON.stringify(a).includes("secret-in-dotenv"), false);
  }
  // A client that cannot elicit: the run pauses at that call, with the question stored once.
  await using g = await gatewayFor(ws);
  const a = await execute(g.client, ahead);
  const l = await execute(g.client, live);
  assertEquals(a.status, "approval_required");
  assertMatch(String(a.description), /paused at mcp call #1/);
  assertEquals(shape(a), shape(l));
  assertEquals(JSON.stringify(a).includes("secret-in-dotenv"), false);
  const stored = [...Deno.readDirSync(join(ws.dir, ".pml", "approvals"))].length;
  assertEquals(stored, 2, "one stored question per paused execution, none for the read ahead");
});

Deno.test("gateway: a call on a channel that asks nothing ends NOT_ASKED and stores no question", async () => {
  await using ws = tempWorkspace(FILESYSTEM_ALLOWED);
  ws.write(".env", "API_KEY=secret");
  await using g = await gatewayFor(ws);
  const result = await g.gateway.runTool("filesystem:read_file", { path: ".env" }, {
    noQuestions: true,
  });
  assertEquals(result.isError, true);
  assertEquals((result.structuredContent as { code?: string }).code, NOT_ASKED);
  assertEquals(JSON.stringify(result).includes("secret"), false);
  let stored: string[] = [];
  try {
    stored = [...Deno.readDirSync(join(ws.dir, ".pml", "approvals"))].map((e) => e.name);
  } catch { /* no folder: nothing stored */ }
  assertEquals(stored, []);
});
