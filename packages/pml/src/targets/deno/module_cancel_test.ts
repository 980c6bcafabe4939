/**
 * A registry module's call the client cancels: the module's `ctx.signal` aborts (the sandbox
 * protocol's `cancel`), and the sandbox goes on serving the module's next call.
 */
import { assertEquals } from "../../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../testing/workspace.ts";
import { testRegistry } from "../../registry/_testing.ts";

const WAITER = `let stopped = 0;
export function wait(_args, ctx) {
  return new Promise((resolve) =>
    ctx.signal.addEventListener("abort", () => resolve("stopped " + (++stopped)))
  );
}
export function stops() { return String(stopped); }`;

Deno.test("deno module: a cancelled call aborts the module's ctx.signal; its next call is served", async () => {
  await using reg = await testRegistry();
  await reg.publish("waiter", "wait", WAITER);
  await reg.publish("waiter", "stops", WAITER);
  await using ws = tempWorkspace({
    registries: [reg.url],
    permissions: { allow: ["waiter"], ask: [], deny: [] },
  });
  await using g = await gatewayFor(ws, {
    registry: { fetch: reg.fetch, warn: () => {} },
    env: { HOME: ws.home },
  });
  assertEquals(textOf(await g.client.callTool({ name: "waiter:stops", arguments: {} })), "0");
  const aborted = new AbortController();
  const waiting = g.client.callTool({ name: "waiter:wait", arguments: {} }, undefined, {
    signal: aborted.signal,
  }).then(() => "answered", () => "rejected");
  // The call reaches the module before it is cancelled: a call after it on the same sandbox
  // is answered after it was sent.
  assertEquals(textOf(await g.client.callTool({ name: "waiter:stops", arguments: {} })), "0");
  aborted.abort("the agent moved on");
  assertEquals(await waiting, "rejected");
  let stops = "0";
  for (let i = 0; i < 600 && stops === "0"; i++) {
    stops = textOf(await g.client.callTool({ name: "waiter:stops", arguments: {} }));
    if (stops === "0") await new Promise((r) => setTimeout(r, 50));
  }
  assertEquals(stops, "1", "the module saw its call cancelled");
});
