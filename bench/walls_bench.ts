/**
 * The cost of each OS wall (issue 39): `shell:exec true` and a call to a dependency (a raw-command
 * MCP server, `node echo.cjs`) through `pml stdio`, under bubblewrap and under Landlock + seccomp
 * (`PML_SANDBOX_WALL`), each with its first call (the sandbox starts: bubblewrap's namespaces, or
 * Landlock's launcher, a Deno process that restricts itself and becomes the sandbox's init) and
 * its warm calls. Rows: Landlock against bubblewrap.
 *
 * ```sh
 * deno task bench walls
 * ```
 *
 * @module
 */
import { tempWorkspace } from "../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "../tests/e2e/_spawn.ts";
import { fmtMs, row, timeCalls } from "./_stats.ts";

/** A plain MCP stdio server (no SDK) with one tool that answers its argument. */
const ECHO = String.raw`
const rl = require("node:readline").createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") {
    send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion,
      capabilities: { tools: {} }, serverInfo: { name: "echo", version: "1.0.0" } } });
  } else if (m.method === "tools/list") {
    send({ jsonrpc: "2.0", id: m.id, result: { tools: [
      { name: "say", inputSchema: { type: "object" } }] } });
  } else if (m.method === "tools/call") {
    send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text",
      text: String(m.params.arguments.text) }] } });
  } else if (m.id !== undefined) {
    send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no" } });
  }
});
`;

interface WallRun {
  firstShell: number;
  shell: number[];
  firstDep: number;
  dep: number[];
}

async function measure(wall: "bubblewrap" | "landlock"): Promise<WallRun> {
  await using ws = tempWorkspace({
    permissions: { allow: ["shell", "echo"] },
    private_mcps: {
      echo: {
        type: "stdio",
        install: { command: "node", args: ["echo.cjs"], envRequired: [] },
        tools: [{ name: "echo:say", description: "says", inputSchema: { type: "object" } }],
      },
    },
  });
  ws.write("echo.cjs", ECHO);
  await using client = await connectStdio(ws, {
    env: { PML_SANDBOX_WALL: wall },
    elicit: () => "yes",
  });
  const shell = async () => {
    const r = await client.callTool({ name: "shell__exec", arguments: { command: "true" } });
    if (r.isError) throw new Error(`shell:exec under ${wall}: ${JSON.stringify(r.content)}`);
  };
  const dep = async () => {
    const r = await client.callTool({ name: "echo__say", arguments: { text: "hi" } });
    const text = (r.content as { text?: string }[])[0]?.text;
    if (r.isError || text !== "hi") throw new Error(`echo under ${wall}: ${JSON.stringify(r)}`);
  };
  const time = async (call: () => Promise<void>) => {
    const t0 = performance.now();
    await call();
    return performance.now() - t0;
  };
  const firstShell = await time(shell);
  const firstDep = await time(dep);
  await timeCalls(shell, 5);
  await timeCalls(dep, 5);
  const run: WallRun = { firstShell, shell: [], firstDep, dep: [] };
  for (let round = 0; round < 4; round++) {
    run.shell.push(...await timeCalls(shell, 15));
    run.dep.push(...await timeCalls(dep, 15));
  }
  return run;
}

const bwrap = await measure("bubblewrap");
const landlock = await measure("landlock");
console.log(
  `first shell:exec (the sandbox starts): bubblewrap ${fmtMs(bwrap.firstShell)}, ` +
    `Landlock ${fmtMs(landlock.firstShell)}`,
);
console.log(
  `first dependency call (approval, the server starts in its sandbox): bubblewrap ${
    fmtMs(bwrap.firstDep)
  }, Landlock ${fmtMs(landlock.firstDep)}`,
);
console.log(row("shell:exec true, bubblewrap", bwrap.shell));
console.log(row("shell:exec true, Landlock (vs bubblewrap)", landlock.shell, bwrap.shell));
console.log(row("dependency call, bubblewrap", bwrap.dep));
console.log(row("dependency call, Landlock (vs bubblewrap)", landlock.dep, bwrap.dep));
