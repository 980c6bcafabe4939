/**
 * End to end: message size on `pml stdio`. A 12 MB `write_file` is served; a 70 MB line is answered
 * with a JSON-RPC error carrying its id, and the gateway keeps serving (it used to exit silently on
 * any line over 10 MiB).
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { forEachLine } from "../../packages/pml/src/sandbox/_lines.ts";
import { PML_BIN, pmlEnv } from "./_spawn.ts";

type Reply = {
  id: unknown;
  result?: { content?: { text?: string }[]; isError?: boolean };
  error?: { code: number; message: string };
};

Deno.test("e2e stdio: a 12 MB write_file works; a 70 MB line gets an error and the next call works", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"] } });
  const child = new Deno.Command(PML_BIN, {
    args: ["stdio"],
    cwd: ws.dir,
    env: pmlEnv(ws),
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const waiting = new Map<unknown, (r: Reply) => void>();
  const lines = forEachLine(child.stdout, (line) => {
    const reply = JSON.parse(line) as Reply;
    waiting.get(reply.id)?.(reply);
  });
  const writer = child.stdin.getWriter();
  const send = async (id: number, method: string, params: unknown): Promise<Reply> => {
    const reply = new Promise<Reply>((resolve) => waiting.set(id, resolve));
    await writer.write(
      new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n"),
    );
    return reply;
  };
  try {
    const init = await send(1, "initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "limits", version: "1" },
    });
    assert(init.result, JSON.stringify(init));
    await writer.write(
      new TextEncoder().encode(
        JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) + "\n",
      ),
    );

    const content = "x".repeat(12 * 1024 * 1024);
    const write = await send(2, "tools/call", {
      name: "filesystem__write_file",
      arguments: { path: "big.txt", content },
    });
    assert(!write.result?.isError && !write.error, JSON.stringify(write).slice(0, 500));
    assertEquals((await Deno.stat(join(ws.dir, "big.txt"))).size, content.length);

    const huge = await send(3, "tools/call", {
      name: "filesystem__write_file",
      arguments: { path: "huge.txt", content: "y".repeat(70 * 1024 * 1024) },
    });
    assertEquals(huge.error?.code, -32600);
    assertStringIncludes(huge.error!.message, "64 MiB");
    let exists = true;
    await Deno.stat(join(ws.dir, "huge.txt")).catch(() => (exists = false));
    assert(!exists, "the oversized call must not run");

    const list = await send(4, "tools/list", {});
    assert(list.result, "the gateway keeps serving after an oversized line");
  } finally {
    await writer.close().catch(() => {});
    await child.status;
    await lines;
  }
});
