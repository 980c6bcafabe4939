import { assert, assertEquals } from "../testing/assert.ts";
import { FILESYSTEM_ALLOWED, gatewayFor, tempWorkspace } from "../testing/workspace.ts";
import { execute } from "./_test_helpers.ts";
import { ExecSandboxPool, execSandboxSpec, WARM_UP_NS } from "./warm_pool.ts";

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What code can see of the global scope (own names and symbols, with their descriptors). */
const GLOBALS_CODE = `
  return Reflect.ownKeys(globalThis).map((k) => {
    const d = Object.getOwnPropertyDescriptor(globalThis, k);
    return [String(k), typeof d.value, d.writable ?? "accessor", d.configurable];
  }).sort();`;

Deno.test("exec warm pool: the warm-up runs before the take, its first calls taken from reads started ahead, and leaves no global behind", async () => {
  const pool = new ExecSandboxPool(execSandboxSpec());
  try {
    pool.prewarm();
    assertEquals(await pool.warmedUp(), true);
    const warmed = pool.take();
    const fresh = pool.takeCold();
    const run = (code: string) =>
      Promise.all(
        [warmed, fresh].map((p) =>
          p.call({ ns: "exec", action: "run", args: { code }, workspace: "/" })
        ),
      );
    const [warmGlobals, freshGlobals] = await run(GLOBALS_CODE);
    assertEquals(warmGlobals, freshGlobals);
    // The warm-up's namespace is not answered for user code: the call has no handler here.
    const [warmCall, freshCall] = await run(
      `try { return await mcp.${WARM_UP_NS}.echo({ n: 1 }); } catch (e) { return e.message; }`,
    );
    assertEquals(warmCall, freshCall);
    assertEquals(warmCall, `mcp.${WARM_UP_NS}:echo is not available here`);
  } finally {
    await pool.close();
  }
});

Deno.test("exec warm pool: a warm process that dies before it is taken is replaced", async () => {
  const pool = new ExecSandboxPool(execSandboxSpec());
  try {
    pool.prewarm();
    assertEquals(await pool.warmedUp(), true);
    const [died] = pool.processes;
    died.kill(); // as the kernel's out-of-memory killer or a stray `kill -9` would
    await died.exited;
    for (let i = 0; i < 1500 && pool.processes.length === 0; i++) await delay(20);
    const [next] = pool.processes;
    assert(next !== undefined && next !== died, "a new warm process is started");
    assertEquals(await pool.warmedUp(), true);
    assert(pool.take() === next, "the next execution takes the replacement");
  } finally {
    await pool.close();
  }
});

Deno.test("exec warm pool: a warm process that dies before its warm-up is not started again", async () => {
  // A machine where the sandbox cannot start must not start one after another: the next take
  // starts one and reports why it fails.
  const pool = new ExecSandboxPool(execSandboxSpec(), { denoPath: "/bin/false" });
  try {
    pool.prewarm();
    assertEquals(await pool.warmedUp(), false);
    for (let i = 0; i < 10; i++) {
      await delay(20);
      assertEquals(pool.processes, []);
    }
  } finally {
    await pool.close();
  }
});

Deno.test("exec warm pool: without keepWarm nothing is warmed up", async () => {
  const pool = new ExecSandboxPool(execSandboxSpec(), { keepWarm: false });
  pool.prewarm();
  assertEquals(await pool.warmedUp(), false);
  assertEquals(pool.processes, []);
  await pool.close();
});

Deno.test("exec warm pool: a spec given as a function is built when the first process starts, once", async () => {
  // As root, the policy walks /etc: a gateway that never runs pml:execute does not pay it.
  let built = 0;
  const pool = new ExecSandboxPool(() => (built++, execSandboxSpec()), { keepWarm: false });
  try {
    assertEquals(built, 0);
    const first = pool.take();
    const second = pool.take();
    assertEquals(built, 1);
    assert(first.spec === second.spec && first.spec === pool.spec);
  } finally {
    await pool.close();
  }
});

Deno.test("pml:execute: the warm-up's mcp namespace is not a tool code can call", async () => {
  await using ws = tempWorkspace(FILESYSTEM_ALLOWED);
  await using g = await gatewayFor(ws);
  const body = await execute(g.client, `return await mcp.${WARM_UP_NS}.echo({ n: 1 });`);
  assert(body.isError, JSON.stringify(body));
  assertEquals([body.status, body.code], ["error", "UNKNOWN_TOOL"]);
  assert(!JSON.stringify(body).includes('"n":1'), JSON.stringify(body));
});
