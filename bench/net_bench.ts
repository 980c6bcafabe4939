/**
 * `shell:exec` in a sandbox with a `sandbox.net` grant (issue 28): the host-side proxy and the
 * `socat` bridge start with the warm sandbox, so a call does not wait for them; a request to the
 * granted loopback port takes one more hop (bridge → unix socket → proxy) than from the host.
 * Rows: `curl` of the granted port through `pml stdio` vs the same `curl` spawned directly, and
 * `true` in the same sandbox vs a direct spawn (the sandbox start stays off the call path).
 *
 * ```sh
 * deno task bench net
 * ```
 *
 * @module
 */
import { tempWorkspace } from "../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "../tests/e2e/_spawn.ts";
import { fmtMs, median, row, timeCalls } from "./_stats.ts";

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
  return new Response("ok");
});
const url = `http://127.0.0.1:${server.addr.port}/`;
await using ws = tempWorkspace({
  permissions: { allow: ["shell"] },
  sandbox: { net: [`127.0.0.1:${server.addr.port}`] },
});
await using client = await connectStdio(ws);

const shell = (command: string, args: string[]) => async () => {
  const r = await client.callTool({ name: "shell__exec", arguments: { command, args } });
  const text = (r.content as { text?: string }[]).map((c) => c.text ?? "").join("");
  if (r.isError || !text.includes(command === "curl" ? '"stdout":"ok"' : '"code":0')) {
    throw new Error(`shell: ${text}`);
  }
};
const direct = (command: string, args: string[]) => async () => {
  const out = await new Deno.Command(command, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) throw new Error(`${command} failed`);
};
const curlArgs = ["-sS", "-m", "5", url];

const t0 = performance.now();
await shell("true", [])();
const first = performance.now() - t0;
await timeCalls(shell("curl", curlArgs), 10);
await timeCalls(direct("curl", curlArgs), 10);
const lat = {
  curl: [] as number[],
  curlDirect: [] as number[],
  t: [] as number[],
  tDirect: [] as number[],
};
for (let round = 0; round < 5; round++) {
  lat.curl.push(...await timeCalls(shell("curl", curlArgs), 20));
  lat.curlDirect.push(...await timeCalls(direct("curl", curlArgs), 20));
  lat.t.push(...await timeCalls(shell("true", []), 20));
  lat.tDirect.push(...await timeCalls(direct("true", []), 20));
}
console.log(`first shell:exec (sandbox with the net proxy started on demand): ${fmtMs(first)}`);
console.log(row("shell:exec curl of the granted port (proxy)", lat.curl, lat.curlDirect));
console.log(row("curl of the same port from the host", lat.curlDirect));
console.log(row("shell:exec `true` in the same sandbox", lat.t, lat.tDirect));
console.log(
  `proxy hop: ${fmtMs(median(lat.curl) - median(lat.t))} of shell:exec curl beyond shell:exec true`,
);
await server.shutdown();
