/** Helper for end-to-end tests: spawn `bin/pml serve` as a user would. */
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
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let err = "";
  let url: string | undefined;
  while (!url) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`pml serve exited: ${err}`);
    err += value;
    url = err.match(/http:\/\/127\.0\.0\.1:\d+\/mcp/)?.[0];
  }
  const draining = (async () => {
    while (!(await reader.read()).done) { /* keep the pipe flowing */ }
  })();
  return {
    url,
    child,
    async [Symbol.asyncDispose]() {
      try {
        child.kill("SIGTERM");
      } catch { /* already gone */ }
      await child.status;
      await draining.catch(() => {});
    },
  };
}
