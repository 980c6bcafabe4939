/**
 * A registry module whose sandbox dies before it answers (a pinned `npm:` import that cannot be
 * loaded) is reported with Deno's reason, not only an exit code; the module beside it still runs.
 */
import { assert, assertEquals, assertStringIncludes } from "../../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../testing/workspace.ts";
import { testRegistry } from "../../registry/_testing.ts";

Deno.test("deno module: a pinned npm: import that cannot be loaded gives Deno's reason", async () => {
  await using reg = await testRegistry();
  await reg.publish(
    "padder",
    "run",
    `import pad from "npm:pml-test-no-such-package@1.0.0";\nexport async function run() { return String(pad); }`,
  );
  await reg.publish("plain", "hello", `export async function hello() { return "hi"; }`);
  await using ws = tempWorkspace({
    registries: [reg.url],
    permissions: { allow: ["padder", "plain"], ask: [], deny: [] },
  });
  await using g = await gatewayFor(ws, {
    registry: { fetch: reg.fetch, warn: () => {} },
    env: { HOME: ws.home },
  });
  const r = await g.client.callTool({ name: "padder:run", arguments: {} });
  assert(r.isError, textOf(r));
  assertStringIncludes(textOf(r), "exited (code 1): error:");
  assertStringIncludes(textOf(r), "pml-test-no-such-package");
  const ok = await g.client.callTool({ name: "plain:hello", arguments: {} });
  assertEquals(textOf(ok), "hi");
});
