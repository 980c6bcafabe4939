/**
 * End to end: a call the agent cancels stops its command. An SDK `Client` over a spawned
 * `bin/pml stdio`, and one over `pml serve`'s HTTP, aborts its `callTool` while `shell:exec` runs a
 * command that would run for minutes: the command and what it started are killed, a call running
 * beside it in the same sandbox answers, and the next `shell:exec` works.
 */
import { join } from "node:path";
import { pidsMentioning } from "../../packages/pml/src/procfs.ts";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import { connectStdio } from "./_spawn.ts";
import { spawnServe } from "./_serve.ts";

/** Polls `check` every 50 ms for at most `ms` (a generous bound, not a timed assertion). */
async function until(check: () => boolean, ms: number): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 50) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

/** The `shell:exec` answer's JSON body. */
function outOf(result: unknown): { code: number; stdout: string } {
  const text = textOf(result);
  return JSON.parse(text.slice(text.indexOf("{")));
}

/** The agent's side: cancel a long command while another runs beside it, then call again. */
async function cancelBesideAnother(client: Client, ws: { dir: string }): Promise<void> {
  // `sleep <seconds>` with a number of its own: the marker in the command lines of the shell and
  // of the `sleep` it started in the background.
  const marker = String(600_000_000 + Math.floor(Math.random() * 300_000_000));
  const aborted = new AbortController();
  const cancelled = client.callTool(
    { name: "shell__exec", arguments: { command: `sleep ${marker} & wait`, timeout_ms: 600_000 } },
    undefined,
    { signal: aborted.signal, timeout: 600_000 },
  ).then(() => false, () => true);
  const beside = client.callTool(
    {
      name: "shell__exec",
      arguments: { command: "while [ ! -e go ]; do sleep 0.05; done; echo beside" },
    },
    undefined,
    { timeout: 600_000 },
  );
  try {
    assert(
      await until(() => pidsMentioning(marker).length >= 2, 60_000),
      `the command started (${pidsMentioning(marker).length} processes)`,
    );
    aborted.abort("the agent pressed Esc");
    assert(await cancelled, "the SDK client rejects its aborted call");
    assert(
      await until(() => pidsMentioning(marker).length === 0, 30_000),
      `the cancelled command and its background child are gone (${pidsMentioning(marker)})`,
    );

    Deno.writeTextFileSync(join(ws.dir, "go"), "");
    assertEquals(outOf(await beside).stdout, "beside\n", "the call beside it answers");
    const next = await client.callTool({
      name: "shell__exec",
      arguments: { command: "echo next" },
    });
    assertEquals(outOf(next).stdout, "next\n", "the next call works");
  } finally {
    Deno.writeTextFileSync(join(ws.dir, "go"), "");
    await beside.catch(() => {});
    for (const pid of pidsMentioning(marker)) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch { /* gone */ }
    }
  }
}

Deno.test("e2e stdio: a cancelled shell:exec kills its command; a call beside it and the next one answer", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell"] } });
  await using client = await connectStdio(ws);
  await cancelBesideAnother(client, ws);
});

Deno.test("e2e serve: a cancelled shell:exec kills its command; a call beside it and the next one answer", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell"] } });
  await using serve = await spawnServe(ws);
  const client = new Client({ name: "e2e", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(serve.url)));
  try {
    await cancelBesideAnother(client, ws);
  } finally {
    await client.close();
  }
});
