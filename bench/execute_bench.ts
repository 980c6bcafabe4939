/**
 * `pml:execute` of a snippet with 3 local `filesystem:read_file` calls, against the same 3 calls
 * made directly as `tools/call`, both through the gateway over the SDK's in-memory transport, in
 * the same run. Also the start of an execution sandbox: taken from the warm pool vs started cold
 * (spawn → first result of `return 1`).
 *
 *   deno run -A bench/execute_bench.ts
 */
import { join } from "node:path";
import { execSandboxSpec } from "../packages/pml/src/execute/mod.ts";
import { ExecSandboxPool } from "../packages/pml/src/execute/warm_pool.ts";
import { gatewayFor, tempWorkspace, textOf } from "../packages/pml/src/testing/workspace.ts";
import { median, row } from "./_stats.ts";

const ROUNDS = 40;
const SANDBOX_ROUNDS = 15;

await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
for (const n of [1, 2, 3]) ws.write(`f${n}.txt`, `file ${n} `.repeat(400));
await using g = await gatewayFor(ws, { prewarm: true });

const SNIPPET = `
  const a = await mcp.filesystem.read_file({ path: "f1.txt" });
  const b = await mcp.filesystem.read_file({ path: "f2.txt" });
  const c = await mcp.filesystem.read_file({ path: "f3.txt" });
  return a.length + b.length + c.length;`;

async function viaExecute(): Promise<void> {
  const res = await g.client.callTool({ name: "pml__execute", arguments: { code: SNIPPET } });
  if (res.isError || !textOf(res).includes('"success"')) throw new Error(textOf(res));
}

async function direct(): Promise<void> {
  for (const n of [1, 2, 3]) {
    const res = await g.client.callTool({
      name: "filesystem__read_file",
      arguments: { path: `f${n}.txt` },
    });
    if (res.isError) throw new Error(textOf(res));
  }
}

const settle = () => new Promise((r) => setTimeout(r, 60)); // lets the next warm sandbox start
const exec: number[] = [];
const base: number[] = [];
for (let i = 0; i < 3; i++) (await viaExecute(), await direct(), await settle());
for (let i = 0; i < ROUNDS; i++) {
  const order = i % 2 === 0 ? [viaExecute, direct] : [direct, viaExecute];
  for (const fn of order) {
    const t0 = performance.now();
    await fn();
    (fn === viaExecute ? exec : base).push(performance.now() - t0);
  }
  await settle();
}

// Sandbox start: warm (already spawned and ready) vs cold (spawned now).
const pool = new ExecSandboxPool(execSandboxSpec());
const warm: number[] = [];
const cold: number[] = [];
const runOne = async (take: () => ReturnType<ExecSandboxPool["take"]>, into: number[]) => {
  const t0 = performance.now();
  const proc = take();
  await proc.call({ ns: "exec", action: "run", args: { code: "return 1" }, workspace: ws.dir });
  into.push(performance.now() - t0);
  await proc.close();
};
pool.prewarm();
for (let i = 0; i < SANDBOX_ROUNDS; i++) {
  await Promise.all(pool.processes.map((p) => p.ready));
  await runOne(() => pool.take(), warm);
  await runOne(() => pool.takeCold(), cold);
}
await pool.close();

console.log(`execute bench: ${ROUNDS} rounds, workspace ${join("<tmp>", "ws")}`);
console.log(row("3 direct tools/call filesystem__read_file", base));
console.log(row("pml:execute with the same 3 mcp.* calls", exec, base));
console.log(row("exec sandbox cold: spawn → `return 1`", cold));
console.log(row("exec sandbox warm: take → `return 1`", warm, cold));
console.log(
  `  pml:execute overhead over the direct calls: ${(median(exec) - median(base)).toFixed(2)} ms`,
);
