/**
 * Attack: `pml:execute` code holds 2 GiB of array buffers (off V8's heap, so its heap limit does
 * not see them). The sandbox's memory watchdog stops it with a clear error, and the next execution
 * works.
 */
import { assertEquals, assertStringIncludes } from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";

const HOARDERS = [
  // all at once, without yielding
  "const a = []; for (let i = 0; i < 32; i++) a.push(new Uint8Array(64 * 1024 * 1024).fill(1)); return a.length;",
  // step by step
  "const a = []; for (let i = 0; i < 32; i++) { a.push(new Uint8Array(64 * 1024 * 1024).fill(1)); await new Promise((r) => setTimeout(r, 10)); } return a.length;",
  // one big buffer
  "const b = new ArrayBuffer(2 * 1024 * 1024 * 1024); new Uint8Array(b).fill(1); return b.byteLength;",
];

Deno.test("attack execute_memory: 2 GiB of buffers is stopped with a clear error; the next execution works", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["pml"] } });
  await using g = await gatewayFor(ws);
  for (const code of HOARDERS) {
    const r = await g.client.callTool({ name: "pml:execute", arguments: { code } });
    const body = JSON.parse(textOf(r));
    assertEquals(body.status, "error", textOf(r));
    assertStringIncludes(body.message, "memory");
  }
  const ok = await g.client.callTool({ name: "pml:execute", arguments: { code: "return 2 + 2;" } });
  assertEquals(JSON.parse(textOf(ok)).result, 4);
});
