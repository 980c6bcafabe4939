/**
 * Security invariant 3 (DESIGN §11), by attack: the std tool sandboxes have no network, no env, no
 * subprocess and no file access outside their grants, and a hanging tool is killed.
 */
import { join } from "node:path";
import { createAuditLog } from "../audit/audit.ts";
import { createRoutingResolver } from "../routing/routing.ts";
import { StdTarget } from "../targets/std/std_target.ts";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../testing/assert.ts";
import { tempWorkspace, testConfig } from "../testing/workspace.ts";
import { SandboxPool } from "./pool.ts";
import { SandboxProcess } from "./sandbox_process.ts";
import type { SandboxSpec } from "./sandbox_spec.ts";

const ATTACK_ENTRY = join(import.meta.dirname!, "testdata", "attack_entry.ts");

async function withSandbox(
  access: "read" | "write" | "run",
  fn: (proc: SandboxProcess, ws: ReturnType<typeof tempWorkspace>) => Promise<void>,
) {
  await using ws = tempWorkspace();
  const config = testConfig(ws, { PML_API_KEY: "pml_secret_key_must_not_leak" });
  const std = new StdTarget({
    config,
    pool: new SandboxPool(),
    audit: createAuditLog(ws.dir),
    routing: createRoutingResolver(),
  });
  const spec: SandboxSpec = { ...std.specFor(access), entry: ATTACK_ENTRY };
  const proc = new SandboxProcess(spec, { onStderr: () => {} });
  try {
    await proc.ready;
    await fn(proc, ws);
  } finally {
    await proc.close();
  }
}

const call = (proc: SandboxProcess, action: string, args: unknown = {}, timeoutMs = 20_000) =>
  proc.call({ ns: "attack", action, args, workspace: "/" }, { timeoutMs });

for (const access of ["read", "write", "run"] as const) {
  Deno.test(`sandbox(${access}): no file access outside the workspace`, async () => {
    await withSandbox(access, async (proc, ws) => {
      Deno.writeTextFileSync(join(ws.root, "outside.txt"), "secret");
      await assertRejects(
        () => call(proc, "read", { path: join(ws.root, "outside.txt") }),
        Error,
        "Requires read access",
      );
      await assertRejects(() => call(proc, "read", { path: "/etc/passwd" }), Error);
      await assertRejects(() => call(proc, "write", { path: join(ws.root, "new.txt") }), Error);
      assertEquals([...Deno.readDirSync(ws.root)].some((e) => e.name === "new.txt"), false);
    });
  });

  Deno.test(`sandbox(${access}): no network, no env, no ffi`, async () => {
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("hi"),
    );
    try {
      await withSandbox(access, async (proc) => {
        await assertRejects(() =>
          call(proc, "fetch", { url: `http://127.0.0.1:${server.addr.port}/` })
        );
        await assertRejects(() => call(proc, "connect", { port: server.addr.port }));
        await assertRejects(() => call(proc, "env"), Error, "env");
        await assertRejects(() => call(proc, "ffi"));
      });
    } finally {
      await server.shutdown();
    }
  });

  Deno.test(`sandbox(${access}): dynamic import of a file outside is refused`, async () => {
    await withSandbox(access, async (proc, ws) => {
      const mod = join(ws.root, "evil.ts");
      Deno.writeTextFileSync(mod, "export const secret = 1;");
      await assertRejects(() => call(proc, "importFile", { url: `file://${mod}` }));
    });
  });
}

Deno.test("sandbox(read|write): no subprocess", async () => {
  for (const access of ["read", "write"] as const) {
    await withSandbox(access, async (proc) => {
      await assertRejects(() => call(proc, "spawn"), Error, "run");
    });
  }
});

Deno.test("sandbox(write): writes inside the workspace only", async () => {
  await withSandbox("write", async (proc, ws) => {
    assertEquals(await call(proc, "write", { path: join(ws.dir, "ok.txt") }), "written");
  });
});

Deno.test("sandbox: an infinite loop is killed on timeout and the process is gone", async () => {
  await withSandbox("read", async (proc) => {
    const pid = proc.pid;
    await assertRejects(() => call(proc, "loop", {}, 500), Error, "timed out");
    await proc.exited;
    assertEquals(proc.alive, false);
    let exists = true;
    try {
      Deno.statSync(`/proc/${pid}`);
    } catch {
      exists = false;
    }
    assert(!exists, `process ${pid} still exists`);
  });
});

Deno.test("shell:exec runs in the workspace with no API key in its environment", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell:exec"] } });
  const { gatewayFor, textOf } = await import("../testing/workspace.ts");
  await using g = await gatewayFor(ws, {
    env: { PML_API_KEY: "pml_secret_key_must_not_leak", TAVILY_API_KEY: "tv" },
  });
  const r = await g.client.callTool({ name: "shell__exec", arguments: { command: "pwd; env" } });
  assert(!r.isError, textOf(r));
  const out = (r.structuredContent as { stdout: string }).stdout;
  assertStringIncludes(out, ws.dir);
  assert(!out.includes("pml_secret_key_must_not_leak"), out);
  assert(!out.includes("TAVILY_API_KEY"), out);
});
