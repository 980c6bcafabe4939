/**
 * `bin/pml-server` runs the server with a small young generation (issue 41 item 14): without it,
 * V8 grew the young generation to its largest under a steady stream of calls and kept it, and one
 * instance's resident memory rose from 85 to 144 MB over 12,000 calls while its live heap stayed
 * at ~19 MB. `bench/server_soak.ts` measures it over time; this checks the flag reaches the
 * process that serves.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { waitForLine } from "../../pml/src/testing/wait_for_line.ts";

const LAUNCHER = join(import.meta.dirname!, "../../../bin/pml-server");

Deno.test("bin/pml-server serve caps V8's young generation (4 MB semi-spaces)", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "pml-memory-" });
  const child = new Deno.Command(LAUNCHER, {
    args: ["serve", "--port", "0"],
    env: { PML_DATA_DIR: dataDir, PML_DATABASE_URL: "" },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  try {
    const { match, rest } = await waitForLine(
      child.stdout,
      /^pml-server listening on (http:\S+)$/m,
      "pml-server serve",
    );
    const health = await fetch(`${match[1]}health`);
    assert.equal(health.status, 200);
    await health.body?.cancel();
    // The launcher execs Deno: the child is the serving process.
    const argv = Deno.readTextFileSync(`/proc/${child.pid}/cmdline`).split("\0");
    assert.ok(
      argv.some((arg) => /^--v8-flags=.*--max-semi-space-size=4\b/.test(arg)),
      `the server runs with ${JSON.stringify(argv)}`,
    );
    child.kill("SIGTERM");
    assert.equal((await child.status).code, 0);
    await rest;
  } finally {
    try {
      child.kill();
    } catch { /* exited */ }
    await Deno.remove(dataDir, { recursive: true });
  }
});
