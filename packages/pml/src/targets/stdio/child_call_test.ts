/**
 * ChildCalls through the real protocol: the real server-everything over stdio, started by
 * ServerProcess (SDK `Client` handshake), its tool calls sent by PML itself on the same transport.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../../testing/assert.ts";
import { isPmlError } from "../../errors.ts";
import { McpError } from "../../sdk/types.ts";
import { isCheckedToolResult } from "../../sdk/tool_result.ts";
import { ServerProcess } from "./server_process.ts";

const ROOT = join(import.meta.dirname!, "..", "..", "..", "..", "..");
const EVERYTHING = join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");

function start(): Promise<ServerProcess> {
  return ServerProcess.start({
    server: "everything",
    command: "node",
    args: [EVERYTHING, "stdio"],
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
    cwd: ROOT,
    mode: "command",
  }, { startTimeoutMs: 30_000 });
}

/** server-everything's long operation: `duration` seconds in `steps` progress steps. */
function longRun(
  server: ServerProcess,
  duration: number,
  steps: number,
  opts: Parameters<ServerProcess["call"]>[3],
) {
  return server.call(
    "everything:trigger-long-running-operation",
    "trigger-long-running-operation",
    { duration, steps },
    opts,
  );
}

function text(result: { content: unknown[] }): string {
  return (result.content as { type: string; text?: string }[]).map((c) => c.text ?? "").join("");
}

Deno.test("stdio calls on the child's transport: answers by id, progress, errors, timeout, abort, sampling, crash", async () => {
  const server = await start();
  try {
    // Concurrent calls: each gets its own answer.
    const answers = await Promise.all(
      Array.from(
        { length: 20 },
        (_, i) =>
          server.call("everything:echo", "echo", { message: `m${i}` }, { timeoutMs: 10_000 }),
      ),
    );
    assertEquals(answers.map(text), answers.map((_, i) => `Echo: m${i}`));
    // Checked against the whole CallToolResult schema here: the gateway's server sends it as is.
    assert(answers.every(isCheckedToolResult));

    // Progress under the call's token, relayed in order.
    const progress: number[] = [];
    const long = await longRun(server, 0.3, 3, {
      timeoutMs: 10_000,
      onprogress: (p) => progress.push(p.progress),
    });
    assertStringIncludes(text(long), "Long running operation completed");
    assertEquals(progress, [1, 2, 3]);

    // A JSON-RPC error (arguments the tool refuses) or an error result: never a resolved success.
    const bad = await server.call("everything:echo", "echo", { message: 42 }, { timeoutMs: 10_000 })
      .then((r) => r, (e) => e);
    assert(
      bad instanceof McpError || (bad as { isError?: boolean }).isError === true,
      `bad arguments: ${JSON.stringify(bad)}`,
    );

    // The bound: RPC_TIMEOUT, and the server keeps serving.
    const late = await assertRejects(() => longRun(server, 5, 5, { timeoutMs: 50 }));
    assert(isPmlError(late) && late.code === "RPC_TIMEOUT", String(late));
    // The bounds share one timer: a short bound after a long one still ends its own call, on time,
    // and the longer call in flight goes on to its answer.
    const slow = longRun(server, 0.5, 2, { timeoutMs: 20_000 });
    const short = await assertRejects(() => longRun(server, 5, 5, { timeoutMs: 50 }));
    assert(isPmlError(short) && short.code === "RPC_TIMEOUT", String(short));
    assertStringIncludes(text(await slow), "Long running operation completed");
    const again = await server.call("everything:echo", "echo", { message: "still" }, {
      timeoutMs: 10_000,
    });
    assertEquals(text(again), "Echo: still");

    // The caller's abort: rejected with its reason (an McpError, reported as the call's bound, as
    // the SDK's Client.request did).
    const abort = new AbortController();
    const aborted = longRun(server, 5, 5, { timeoutMs: 10_000, signal: abort.signal });
    abort.abort("the agent cancelled");
    const reason = await assertRejects(() => aborted);
    assert(isPmlError(reason) && reason.cause instanceof McpError, String(reason));
    assertStringIncludes((reason.cause as McpError).message, "the agent cancelled");

    // The server's sampling request during a call reaches the call's sampler (SDK client's handler).
    const sampled = await server.call(
      "everything:trigger-sampling-request",
      "trigger-sampling-request",
      { prompt: "hello", maxTokens: 10 },
      {
        timeoutMs: 10_000,
        sample: () =>
          Promise.resolve({
            role: "assistant",
            model: "test-model",
            content: { type: "text", text: "sampled answer" },
          }),
      },
    );
    assertStringIncludes(text(sampled), "sampled answer");

    // The child's death fails the call in flight with DEPENDENCY_CRASHED.
    const pending = longRun(server, 30, 30, { timeoutMs: 60_000 });
    await new Promise((r) => setTimeout(r, 200));
    Deno.kill(server.pid, "SIGKILL");
    const crash = await assertRejects(() => pending);
    assert(isPmlError(crash) && crash.code === "DEPENDENCY_CRASHED", String(crash));
  } finally {
    await server.stop(0);
  }
});
