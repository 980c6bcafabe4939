/**
 * Attack: resources. Through a spawned `pml stdio` (as root here and in CI) with `shell:exec`
 * allowed: a fork bomb of depth 12, 1.5 GiB into the sandbox's `/tmp`, 256 MiB into `/dev/shm`,
 * a 1.5 GiB file in the workspace; through `pml:execute`, 1.5 GiB into the Cache API; through a
 * sandbox with a small disk quota, a writer of many files. Family: resources. Each must stop at
 * its kernel limit (`src/sandbox/limits.ts`) or watchdog, the peaks are printed, and the next call
 * works. Sizes stay bounded for a small shared machine: the limits are what keep them so.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "../e2e/_spawn.ts";
import { taskChildren } from "../../packages/pml/src/procfs.ts";
import { DENO_LIMITS, PROGRAM_LIMITS } from "../../packages/pml/src/sandbox/limits.ts";
import { SandboxProcess } from "../../packages/pml/src/sandbox/sandbox_process.ts";
import { sandboxPolicy } from "../../packages/pml/src/sandbox/policy.ts";

type Out = { code: number; stdout: string; stderr: string };

function parse(result: unknown): Out | { error: string } {
  const text = ((result as { content: { text?: string }[] }).content ?? []).map((c) => c.text ?? "")
    .join("");
  const at = text.indexOf("{");
  try {
    return JSON.parse(text.slice(at)) as Out;
  } catch {
    return { error: text };
  }
}

/** Processes below this test (the `pml` it spawned and its sandboxes). */
function processCount(): number {
  let n = 0;
  const stack = [Deno.pid];
  while (stack.length) {
    for (const child of taskChildren(stack.pop()!)) (n++, stack.push(child));
  }
  return n;
}

const MIB = 1024 * 1024;

/** Whether this machine lets root create a pids control group (cgroup v1, or v2 at the root). */
function canCreateGroups(): boolean {
  try {
    Deno.mkdirSync("/sys/fs/cgroup/pids/pml-probe");
    Deno.removeSync("/sys/fs/cgroup/pids/pml-probe");
    return true;
  } catch {
    return false;
  }
}

Deno.test("attack resources: a depth-12 fork bomb stays near the task limit, /tmp and /dev/shm are sized, a file stops at RLIMIT_FSIZE", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell"] } });
  await using client = await connectStdio(ws);
  const exec = async (command: string, timeout_ms = 30_000) =>
    parse(await client.callTool({ name: "shell__exec", arguments: { command, timeout_ms } }));
  const stdout = (out: Out | { error: string }) => "stdout" in out ? out.stdout : out.error;
  assertEquals(stdout(await exec("echo warm")), "warm\n");
  // The kernel's caps are in place: RLIMIT_NPROC inside, and as root (where the kernel ignores
  // RLIMIT_NPROC) a control group of PML's own, where this machine lets one be created.
  const limits = stdout(await exec("grep -E 'processes|file size' /proc/self/limits"));
  assertStringIncludes(limits, `Max processes             ${PROGRAM_LIMITS.tasks}`);
  assertStringIncludes(limits, `Max file size             ${PROGRAM_LIMITS.fileMb * MIB}`);
  if (Deno.uid() === 0 && canCreateGroups()) {
    const groups = [...Deno.readDirSync("/sys/fs/cgroup/pids")].filter((e) =>
      e.name.startsWith("pml-") &&
      Deno.readTextFileSync(`/sys/fs/cgroup/pids/${e.name}/pids.max`).trim() ===
        String(PROGRAM_LIMITS.tasks)
    );
    assert(groups.length > 0, "the shell's sandbox runs in a pids group of PML's");
  }

  // The fork bomb: a binary tree of depth 12 (8,191 processes if nothing stops it).
  const base = processCount();
  let peak = base;
  const sampler = setInterval(() => (peak = Math.max(peak, processCount())), 5);
  const bomb = await exec(
    "b() { if [ $1 -lt 12 ]; then b $(($1+1)) & b $(($1+1)) & wait; else sleep 20; fi; }; b 0",
  );
  clearInterval(sampler);
  const grew = peak - base;
  console.error(`attack resources: fork bomb peak +${grew} processes`);
  assert(grew <= PROGRAM_LIMITS.tasks + 16, `the fork bomb reached +${grew} processes`);
  assert(
    "error" in bomb || bomb.code !== 0,
    `the fork bomb was stopped: ${JSON.stringify(bomb).slice(0, 300)}`,
  );
  assertEquals(stdout(await exec("echo again")), "again\n", "the shell works after the bomb");

  // 1.5 GiB into /tmp, 256 MiB into /dev/shm: refused at their sizes.
  const tmp = await exec(
    "dd if=/dev/zero of=/tmp/big bs=1M count=1536 2>&1; stat -c %s /tmp/big; rm -f /tmp/big",
  );
  const tmpBytes = Number(stdout(tmp).trim().split("\n").at(-1));
  console.error(`attack resources: /tmp took ${Math.round(tmpBytes / MIB)} MiB of 1536 written`);
  assert(tmpBytes <= PROGRAM_LIMITS.tmpMb * MIB, `/tmp held ${tmpBytes} bytes`);
  assertStringIncludes(stdout(tmp), "No space left");
  const shm = await exec(
    "dd if=/dev/zero of=/dev/shm/big bs=1M count=256 2>&1 | tail -1; stat -c %s /dev/shm/big; rm -f /dev/shm/big",
  );
  const shmBytes = Number(stdout(shm).trim().split("\n").at(-1));
  console.error(`attack resources: /dev/shm took ${Math.round(shmBytes / MIB)} MiB of 256 written`);
  assert(shmBytes <= PROGRAM_LIMITS.shmMb * MIB, `/dev/shm held ${shmBytes} bytes`);

  // One 1.5 GiB file in the workspace: RLIMIT_FSIZE stops it at 1 GiB (SIGXFSZ).
  const big = await exec("dd if=/dev/zero of=big.bin bs=1M count=1536 2>&1 | tail -2");
  const size = Deno.statSync(join(ws.dir, "big.bin")).size;
  Deno.removeSync(join(ws.dir, "big.bin"));
  console.error(`attack resources: one file reached ${Math.round(size / MIB)} MiB of 1536 written`);
  assert(size <= PROGRAM_LIMITS.fileMb * MIB, `the file reached ${size} bytes: ${stdout(big)}`);
  assertEquals(stdout(await exec("echo done")), "done\n");
});

Deno.test("attack resources: pml:execute cannot hold 1.5 GiB in the Cache API (its /tmp is sized)", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["pml"] } });
  await using g = await gatewayFor(ws);
  const code = `const c = await caches.open("x"); let n = 0;
    try {
      for (let i = 0; i < 96; i++) {
        await c.put("http://a/" + i, new Response(new Uint8Array(16 * 1024 * 1024)));
        n++;
      }
    } catch (e) { return { n, error: String(e) }; }
    return { n };`;
  const r = await g.client.callTool({ name: "pml:execute", arguments: { code } });
  const body = JSON.parse(textOf(r));
  const stored = body.result?.n ?? 0;
  console.error(`attack resources: the Cache API took ${stored * 16} MiB of 1536 put`);
  assert(stored * 16 <= DENO_LIMITS.tmpMb, `the Cache API held ${stored * 16} MiB: ${textOf(r)}`);
  const ok = await g.client.callTool({ name: "pml:execute", arguments: { code: "return 2 + 2;" } });
  assertEquals(JSON.parse(textOf(ok)).result, 4);
});

Deno.test("attack resources: a call that writes past its disk quota is stopped", async () => {
  await using ws = tempWorkspace();
  const entry = ws.write(
    "entry.ts",
    `import { serveModules } from ${
      JSON.stringify(new URL("../../packages/pml/src/sandbox/_runner.ts", import.meta.url).href)
    };
await serveModules({ w: { fill: async (args: { dir: string }) => {
  for (let i = 0; i < 8; i++) {
    await Deno.writeFile(args.dir + "/f" + i, new Uint8Array(16 * 1024 * 1024).fill(7));
    await new Promise((r) => setTimeout(r, 150));
  }
  return "all written";
} } });`,
  );
  const proc = new SandboxProcess({
    entry,
    read: [ws.dir],
    write: [ws.dir],
    net: [],
    run: false,
    env: {},
    cwd: ws.dir,
    maxWriteMb: 32,
    os: sandboxPolicy({ view: "narrow", env: {}, read: [ws.dir], write: [ws.dir] }),
  }, { onStderr: () => {} });
  try {
    await proc.ready;
    const outcome = await proc.call({
      ns: "w",
      action: "fill",
      args: { dir: ws.dir },
      workspace: ws.dir,
    })
      .then((v) => String(v), (e: Error) => e.message);
    let written = 0;
    for (const e of Deno.readDirSync(ws.dir)) {
      if (e.name.startsWith("f")) written += Deno.statSync(join(ws.dir, e.name)).size;
    }
    console.error(`attack resources: quota 32 MiB, ${Math.round(written / MIB)} MiB written`);
    assertStringIncludes(outcome, "wrote more than 32 MiB");
    assert(written < 8 * 16 * MIB, "the writer was stopped before its end");
  } finally {
    await proc.close();
  }
});
