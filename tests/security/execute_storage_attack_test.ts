/**
 * Attack: `pml:execute` code stores data through Web Storage and the Cache API, hoping it persists
 * into the next execution (or another workspace) through the user's Deno `location_data`. In the OS
 * sandbox both live in a private Deno cache that dies with the execution.
 */
import { assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import type { Client } from "../../packages/pml/src/sdk/client.ts";

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
