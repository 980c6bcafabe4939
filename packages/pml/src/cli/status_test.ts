import { assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import type { CliIo } from "./io.ts";
import { runCli } from "./run.ts";

function statusOf(ws: { dir: string; home: string }, path: string, wall?: string) {
  const out: string[] = [];
  const io: CliIo = {
    env: { PML_WORKSPACE: ws.dir, PATH: path, ...(wall ? { PML_SANDBOX_WALL: wall } : {}) },
    cwd: ws.dir,
    home: ws.home,
    stdout: (t) => out.push(t),
    stderr: () => {},
    isTerminal: false,
  };
  return { io, out };
}

Deno.test("status: without an OS sandbox, says what is refused and what to install", async () => {
  await using ws = tempWorkspace();
  const s = statusOf(ws, "/nonexistent", "bubblewrap");
  assertEquals(await runCli(["status"], s.io), 0);
  const line = s.out.join("").split("\n").find((l) => l.startsWith("sandbox"))!;
  assertStringIncludes(line, "NONE (bubblewrap is not installed");
  assertStringIncludes(line, "apt-get install bubblewrap");
  assertStringIncludes(line, "shell:exec and stdio dependencies are refused");
});

Deno.test("status: with sandbox.unconfined and no OS sandbox, says they run UNCONFINED", async () => {
  await using ws = tempWorkspace({ sandbox: { unconfined: true } });
  const s = statusOf(ws, "/nonexistent", "bubblewrap");
  assertEquals(await runCli(["status", "--json"], s.io), 0);
  const status = JSON.parse(s.out.join(""));
  assertStringIncludes(
    status.osSandbox,
    "run UNCONFINED because .pml.json sets sandbox.unconfined",
  );
});

Deno.test("status: with bubblewrap, local tools run confined", async () => {
  await using ws = tempWorkspace();
  const s = statusOf(ws, Deno.env.get("PATH") ?? "/usr/bin:/bin");
  assertEquals(await runCli(["status", "--json"], s.io), 0);
  assertStringIncludes(JSON.parse(s.out.join("")).osSandbox, "bubblewrap (");
});

Deno.test("status: without bubblewrap, names the Landlock wall and why in one line", async () => {
  await using ws = tempWorkspace();
  const s = statusOf(ws, "/nonexistent");
  assertEquals(await runCli(["status", "--json"], s.io), 0);
  const line = JSON.parse(s.out.join("")).osSandbox as string;
  assertStringIncludes(line, "Landlock ABI ");
  assertStringIncludes(line, "bubblewrap not used: bubblewrap is not installed");
  assertEquals(line.includes("\n"), false);
});
