/** Test helper: runs the `pml` CLI in a temp workspace, as a terminal there would. */
import { join } from "node:path";
import { runCli } from "../cli/run.ts";
import type { CliIo } from "../cli/io.ts";
import type { TempWorkspace } from "./workspace.ts";

/** Runs `pml ...argv` in `ws`; returns its exit code and output. */
export async function pml(
  ws: TempWorkspace,
  ...argv: string[]
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  const io: CliIo = {
    env: { PML_WORKSPACE: ws.dir, HOME: ws.home, PML_HOME: join(ws.home, ".pml") },
    cwd: ws.dir,
    home: ws.home,
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    isTerminal: false,
  };
  const code = await runCli(argv, io);
  return { code, stdout, stderr };
}
