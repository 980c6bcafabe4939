/**
 * Orphans, by timing: a sandbox stopped while it is still starting (a `pml` that exits right after
 * a warm sandbox was spawned, a pool replacing one, a dependency closed as it starts). Killing
 * bubblewrap alone then leaves the sandbox's init, and what it runs, alive (its parent-death
 * signal is not set yet) or blocked forever; PML kills the sandbox whole. Family: orphans.
 */
import { join } from "node:path";
import { assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { pidsMentioning } from "../../packages/pml/src/procfs.ts";
import { sandboxPolicy } from "../../packages/pml/src/sandbox/policy.ts";
import { SandboxProcess } from "../../packages/pml/src/sandbox/sandbox_process.ts";
import type { SandboxSpec } from "../../packages/pml/src/sandbox/sandbox_spec.ts";
import { ChildTransport } from "../../packages/pml/src/targets/stdio/child_transport.ts";
import { commandLaunch } from "../../packages/pml/src/deps/command_launch.ts";
import { parseStdioMetadata } from "../../packages/pml/src/deps/metadata.ts";

const ROUNDS = 40;
/** Delays between spawn and kill, in ms: the sandbox's setup takes a few. */
const DELAYS = [0, 0, 0.5, 1, 2, 3, 5, 8];

async function settle(marker: string): Promise<number[]> {
  // What was killed is gone within moments; what was left stays.
  for (let i = 0; i < 40 && pidsMentioning(marker).length > 0; i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  return pidsMentioning(marker);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("attack orphans: std and pml:execute sandboxes killed while they start leave no process", async () => {
  await using ws = tempWorkspace();
  const spec: SandboxSpec = {
    entry: join(
      import.meta.dirname!,
      "..",
      "..",
      "packages",
      "pml",
      "src",
      "sandbox",
      "std_entry.ts",
    ),
    read: [ws.dir],
    write: [],
    net: [],
    run: false,
    env: {},
    cwd: ws.dir,
    os: sandboxPolicy({ view: "narrow", env: {}, read: [ws.dir] }),
  };
  for (let i = 0; i < ROUNDS; i++) {
    const proc = new SandboxProcess(spec, { onStderr: () => {} });
    proc.ready.catch(() => {});
    await sleep(DELAYS[i % DELAYS.length]);
    await proc.close();
  }
  assertEquals(await settle(ws.dir), [], "sandbox processes left behind");
});

Deno.test("attack orphans: a raw-command dependency closed while its sandbox starts leaves no process", async () => {
  await using ws = tempWorkspace();
  const meta = parseStdioMetadata("sleeper", {
    type: "stdio",
    install: { command: "sleep", args: ["317"] },
    tools: [{ name: "sleeper:go", inputSchema: { type: "object" } }],
  }, "test");
  const spec = commandLaunch(meta, {
    workspace: ws.dir,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
    depsDir: join(ws.dir, ".pml", "deps"),
  });
  for (let i = 0; i < 3 * ROUNDS; i++) {
    const child = new ChildTransport(spec, { onStderr: () => {} });
    await child.start();
    await sleep(DELAYS[i % DELAYS.length]);
    await child.close(0);
  }
  assertEquals(await settle(ws.dir), [], "dependency sandboxes left behind");
});
