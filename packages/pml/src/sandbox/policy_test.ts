import { assert, assertEquals } from "../testing/assert.ts";
import { HOST_VIEW_REUSE_MS, refreshHostViews, reusedFor } from "./host_view.ts";
import { sandboxPolicy } from "./policy.ts";
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

Deno.test("reusedFor: a refresh looks again for the keys in use, and the looks it took are reused", () => {
  let runs = 0;
  const look = reusedFor(HOST_VIEW_REUSE_MS, (key) => `${key} ${++runs}`);
  assertEquals(look("a", 10_000), "a 1");
  assertEquals(look("b", 12_000), "b 2");
  look.refresh(2_000, 12_500);
  assertEquals(runs, 3, "only `b`, used 500 ms ago, is looked at again; `a` is dropped");
  assertEquals(look("b", 12_500 + HOST_VIEW_REUSE_MS - 1), "b 3", "reused: no look on the call");
  assertEquals(look("a", 12_600), "a 4", "a dropped key looks again on its next use");
});

Deno.test("refreshHostViews: a secret that appears in HOME is hidden from the next policy, without waiting for the reuse window", async () => {
  await using ws = tempWorkspace();
  const env = { HOME: ws.home, PATH: "/usr/bin" };
  const ssh = `${ws.home}/.ssh`;
  assertEquals(sandboxPolicy({ view: "toolbox", env }).denyRead.includes(ssh), false);
  Deno.mkdirSync(ssh);
  assertEquals(sandboxPolicy({ view: "toolbox", env }).denyRead.includes(ssh), false, "reused");
  refreshHostViews(10_000);
  assertEquals(sandboxPolicy({ view: "toolbox", env }).denyRead.includes(ssh), true);
});

Deno.test("sandboxPolicy: a secret or a guarded file replaced by a new entry changes the policy, one written in place does not", async () => {
  await using ws = tempWorkspace();
  const env = { HOME: ws.home, PATH: "/usr/bin" };
  const secret = `${ws.home}/.npmrc`;
  const guarded = ws.write(".git/config", "a");
  Deno.writeTextFileSync(secret, "a");
  const policy = () =>
    JSON.stringify(sandboxPolicy({ view: "toolbox", env, write: [ws.dir], denyWrite: [guarded] }));
  const first = policy();
  Deno.writeTextFileSync(secret, "b");
  Deno.writeTextFileSync(guarded, "b");
  refreshHostViews(10_000);
  assertEquals(policy(), first, "written in place: the same entries, the same sandbox");
  Deno.writeTextFileSync(`${guarded}.lock`, "c");
  Deno.renameSync(`${guarded}.lock`, guarded);
  const renamed = policy();
  assert(renamed !== first, "a guarded file saved by a rename is a new entry, at once");
  Deno.removeSync(secret);
  Deno.writeTextFileSync(secret, "c");
  assertEquals(policy(), renamed, "a secret's look is reused");
  refreshHostViews(10_000);
  assert(policy() !== renamed, "a secret created again is a new entry from the next look");
});

Deno.test("sandboxPolicy: PML's home stays hidden under every grant; only its caches of public code can be read", async () => {
  await using ws = tempWorkspace();
  const pmlHome = `${ws.home}/.pml`;
  Deno.mkdirSync(`${pmlHome}/deno`, { recursive: true });
  const env = { HOME: ws.home, PATH: "/usr/bin" };
  const policy = sandboxPolicy({
    view: "toolbox",
    env,
    read: [pmlHome, `${pmlHome}/approvals`, `${pmlHome}/deno`],
    write: [ws.home, `${pmlHome}/approvals`],
    denyWrite: [pmlHome, `${ws.home}/.bashrc`],
  });
  assert(policy.denyRead.includes(pmlHome));
  assertEquals(policy.write, [ws.home], "no write grant inside it");
  assert(!policy.read.includes(pmlHome) && !policy.read.includes(`${pmlHome}/approvals`));
  assert(policy.read.includes(`${pmlHome}/deno`), "Deno's cache, granted by PML, stays");
  assert(!policy.denyWrite.includes(pmlHome), "no read-only bind of it over its hiding place");
  // PML_HOME elsewhere is hidden too.
  const elsewhere = `${ws.root}/pml-home`;
  Deno.mkdirSync(elsewhere);
  const other = sandboxPolicy({
    view: "narrow",
    env: { ...env, PML_HOME: elsewhere },
    read: [ws.root],
  });
  assert(other.denyRead.includes(elsewhere), JSON.stringify(other.denyRead));
});
