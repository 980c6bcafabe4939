/**
 * The `cancel` message of the sandbox protocol: the caller's abort reaches the module's
 * `ctx.signal` for that call only; the other calls of the sandbox go on and the next one is served.
 */
import { join } from "node:path";
import { assertEquals } from "../testing/assert.ts";
import { SandboxProcess } from "./sandbox_process.ts";

const ENTRY = join(import.meta.dirname!, "testdata", "cancel_entry.ts");

Deno.test("sandbox: an aborted call's module sees ctx.signal abort; a call beside it goes on", async () => {
  const proc = new SandboxProcess(
    { entry: ENTRY, read: [], write: [], net: [], run: false, env: {}, cwd: "/" },
    { onStderr: () => {} },
  );
  try {
    await proc.ready;
    const cancelled = new AbortController();
    const kept = new AbortController();
    const call = (action: string, signal?: AbortSignal, args: unknown = {}) =>
      proc.call({ ns: "waits", action, args, workspace: "/" }, { timeoutMs: 60_000, signal });
    const first = call("wait", cancelled.signal);
    const beside = call("wait", kept.signal);
    assertEquals(await call("echo", undefined, { text: "served" }), "served");
    cancelled.abort();
    assertEquals(await first, "stopped: the client cancelled the call");
    assertEquals(proc.inFlight, 1, "the call beside it still runs");
    assertEquals(await call("echo", undefined, { text: "next" }), "next");
    kept.abort();
    assertEquals(await beside, "stopped: the client cancelled the call");

    const early = new AbortController();
    early.abort();
    assertEquals(await call("wait", early.signal), "stopped: the client cancelled the call");
    assertEquals(proc.inFlight, 0);
  } finally {
    await proc.close();
  }
});
