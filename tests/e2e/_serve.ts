/** Helper for end-to-end tests: spawn `bin/pml serve` as a user would. */
import { waitForLine } from "../../packages/pml/src/testing/wait_for_line.ts";
import { PML_BIN, pmlEnv } from "./_spawn.ts";

/** Spawns `pml serve --port 0` and waits for the URL it prints on stderr. */
export async function spawnServe(
  ws: { dir: string; home: string },
  env: Record<string, string> = {},
) {
  const child = new Deno.Command(PML_BIN, {
    args: ["serve", "--port", "0"],
    cwd: ws.dir,
    env: pmlEnv(ws, env),
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const { match, rest } = await waitForLine(
    child.stderr,
    /http:\/\/127\.0\.0\.1:\d+\/mcp/,
    "pml serve",
  );
  return {
    url: match[0],
    child,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.status;
      await rest;
    },
  };
}
