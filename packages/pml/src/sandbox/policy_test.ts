import { assertEquals } from "../testing/assert.ts";
import { HOST_VIEW_REUSE_MS, reusedFor, sandboxPolicy } from "./policy.ts";
import { tempWorkspace } from "../testing/workspace.ts";

Deno.test("reusedFor: one computation per key within the reuse window, a new one after it or when the clock goes back", () => {
  let runs = 0;
  const look = reusedFor(HOST_VIEW_REUSE_MS, (key) => `${key} ${++runs}`);
  assertEquals(look("a", 10_000), "a 1");
  assertEquals(look("a", 10_000 + HOST_VIEW_REUSE_MS - 1), "a 1");
  assertEquals(look("b", 10_000), "b 2", "another key is its own look");
  assertEquals(look("a", 10_000 + HOST_VIEW_REUSE_MS), "a 3");
  assertEquals(look("a", 5_000), "a 4", "a clock set back looks again");
});

Deno.test("sandboxPolicy: a secret that appears in HOME is hidden once the reuse window has passed", async () => {
  await using ws = tempWorkspace();
  const env = { HOME: ws.home, PATH: "/usr/bin" };
  const ssh = `${ws.home}/.ssh`;
  assertEquals(sandboxPolicy({ view: "toolbox", env }).denyRead.includes(ssh), false);
  Deno.mkdirSync(ssh);
  await new Promise((r) => setTimeout(r, HOST_VIEW_REUSE_MS + 50));
  assertEquals(sandboxPolicy({ view: "toolbox", env }).denyRead.includes(ssh), true);
});
