/**
 * Attack: `pml:execute` code stores data through Web Storage and the Cache API, hoping it persists
 * into the next execution (or another workspace) through the user's Deno `location_data`. In the OS
 * sandbox both live in a private Deno cache that dies with the execution.
 */
import { assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import type { Client } from "../../packages/pml/src/sdk/client.ts";
import { ExecSandboxPool, execSandboxSpec } from "../../packages/pml/src/execute/warm_pool.ts";

const run = async (client: Client, code: string) =>
  JSON.parse(textOf(await client.callTool({ name: "pml:execute", arguments: { code } }))).result;

Deno.test("attack execute_storage: localStorage and caches written by one execution are gone in the next", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["pml"] } });
  await using other = tempWorkspace({ permissions: { allow: ["pml"] } });
  await using g = await gatewayFor(ws);
  await using h = await gatewayFor(other);
  assertEquals(
    await run(
      g.client,
      "localStorage.setItem('k', 'x'.repeat(1_000_000)); const c = await caches.open('c'); await c.put('http://a/', new Response('y')); return localStorage.getItem('k').length;",
    ),
    1_000_000,
  );
  for (const client of [g.client, h.client]) {
    assertEquals(await run(client, "return localStorage.getItem('k');"), null);
    assertEquals(await run(client, "return await caches.has('c');"), false);
  }
});

Deno.test("attack execute_storage without an OS sandbox: localStorage and caches do not reach the user's Deno cache", async () => {
  // No bubblewrap: the execution runs with Deno's flags only, and must still not share storage.
  const pool = new ExecSandboxPool(execSandboxSpec(), {
    keepWarm: false,
    osSandbox: { available: false, reason: "bubblewrap is not installed (test)" },
    onStderr: () => {},
  });
  const exec = async (code: string) => {
    const proc = pool.take();
    try {
      return await proc.call(
        { ns: "exec", action: "run", args: { code }, workspace: "/" },
        { timeoutMs: 20_000 },
      );
    } finally {
      await proc.close();
    }
  };
  try {
    const key = `pml-attack-${crypto.randomUUID()}`;
    assertEquals(
      await exec(
        `localStorage.setItem('${key}', 'x'); await (await caches.open('${key}')).put('http://a/', new Response('y')); return localStorage.getItem('${key}');`,
      ),
      "x",
    );
    assertEquals(await exec(`return localStorage.getItem('${key}');`), null);
    assertEquals(await exec(`return await caches.has('${key}');`), false);
  } finally {
    await pool.close();
  }
});
