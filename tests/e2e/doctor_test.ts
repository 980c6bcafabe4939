/**
 * `pml doctor` through `bin/pml`, under each wall this machine has: bubblewrap, Landlock (forced,
 * and found by itself where `PATH` has no `bwrap`), and none. Each runs the wall's canary for real.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { runPml } from "./_spawn.ts";
import type { DoctorReport } from "../../packages/pml/src/cli/doctor.ts";

async function doctor(
  ws: { dir: string; home: string },
  env: Record<string, string>,
): Promise<{ code: number; report: DoctorReport }> {
  const run = await runPml(ws, ["doctor", "--json"], env);
  return { code: run.code, report: JSON.parse(run.stdout) as DoctorReport };
}

Deno.test("pml doctor: bubblewrap here, its canary refused everything but the workspace", async () => {
  await using ws = tempWorkspace();
  const { code, report } = await doctor(ws, { PML_SANDBOX_WALL: "bubblewrap" });
  assertEquals(report.wall, "bubblewrap", JSON.stringify(report));
  assertEquals(code, 0);
  const done = (probe: string) => report.canary!.outcomes[probe as "read-secret"]?.done;
  assertEquals(
    ["read-secret", "write-outside", "reach-host", "write-protected"].map(done),
    [false, false, false, false],
  );
  assertEquals(["read-workspace", "write-workspace", "run-shell"].map(done), [true, true, true]);
  assert(report.canary!.ok);
  assertEquals(report.doesNotHold, []);
});

Deno.test("pml doctor: Landlock, forced and found where PATH has no bwrap: its canary, what it does not hold, what to install", async () => {
  await using ws = tempWorkspace();
  // A PATH with a shell for the launcher, and no bubblewrap.
  const bin = join(ws.root, "bin");
  Deno.mkdirSync(bin);
  for (const tool of ["bash", "env"]) Deno.symlinkSync(`/usr/bin/${tool}`, join(bin, tool));
  const walls: Record<string, string>[] = [{ PML_SANDBOX_WALL: "landlock" }, {
    PATH: bin,
    PML_SANDBOX_WALL: "",
  }];
  for (const env of walls) {
    const { code, report } = await doctor(ws, env);
    assertEquals(report.wall, "landlock", JSON.stringify(report));
    assertEquals(code, 0, JSON.stringify(report));
    assert((report.landlockAbi ?? 0) >= 1);
    const outcomes = report.canary!.outcomes;
    assertEquals(
      (["read-secret", "write-outside", "reach-host", "reach-proxy", "write-workspace"] as const)
        .map((p) => outcomes[p]?.done),
      [false, false, false, true, true],
    );
    assert(report.canary!.ok);
    assert(report.doesNotHold.some((line) => line.startsWith("protected and control files")));
    if ("PATH" in env) {
      assertStringIncludes(report.why, "bubblewrap is not installed");
      assert(
        report.advice.some((a) => a.includes("apt-get install bubblewrap")),
        report.advice.join(),
      );
    }
  }
});

Deno.test("pml doctor: no wall: exit 1, nothing held, the way to one", async () => {
  await using ws = tempWorkspace();
  const { code, report } = await doctor(ws, { PML_SANDBOX_WALL: "none" });
  assertEquals(code, 1);
  assertEquals(report.wall, "none");
  assertEquals(report.canary, undefined);
  assertEquals(report.holds, []);
  assert(report.advice.some((a) => a.includes("PML_SANDBOX_WALL")));
});
