/**
 * Memory after one large `pml:execute` result: resident memory of a spawned `pml stdio` when idle,
 * right after a 100 MB result, and 3 s later, against its own idle figure (the baseline). Before
 * the gateway asked V8 to collect after large messages, RSS stayed at ~800 MB.
 *
 * `deno task bench large_result [MB]`
 */
import { join } from "node:path";
import { trustContentSync } from "../packages/pml/src/config/trust_store.ts";
import { forEachLine } from "../packages/pml/src/sandbox/_lines.ts";
import { figure } from "./_stats.ts";

const MB = Number(Deno.args[0] ?? 100);
const root = join(import.meta.dirname!, "..");
const ws = Deno.makeTempDirSync({ prefix: "pml-bench-" });
Deno.mkdirSync(join(ws, ".git"));
const pmlJson = JSON.stringify({ permissions: { allow: ["pml"] } });
Deno.writeTextFileSync(join(ws, ".pml.json"), pmlJson);
trustContentSync(join(ws, ".pml"), Deno.realPathSync(ws), pmlJson); // as `pml trust` would
const child = new Deno.Command(join(root, "bin", "pml"), {
  args: ["stdio"],
  cwd: ws,
  env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: ws, PML_WORKSPACE: ws },
  clearEnv: true,
  stdin: "piped",
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const waiting = new Map<number, (line: string) => void>();
const reading = forEachLine(child.stdout, (line) => {
  const { id } = JSON.parse(line) as { id: number };
  waiting.get(id)?.(line);
});
const writer = child.stdin.getWriter();
let next = 0;
async function send(method: string, params: unknown): Promise<string> {
  const id = ++next;
  const reply = new Promise<string>((resolve) => waiting.set(id, resolve));
  const line = JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n";
  await writer.write(new TextEncoder().encode(line));
  return await reply;
}
const rssMb = () => {
  const status = Deno.readTextFileSync(`/proc/${child.pid}/status`);
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
};
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

await send("initialize", {
  protocolVersion: "2025-06-18",
  capabilities: {},
  clientInfo: { name: "bench", version: "1" },
});
await send("tools/list", {});
await pause(1000);
const idle = rssMb();
const reply = await send("tools/call", {
  name: "pml__execute",
  arguments: { code: `return "x".repeat(${MB} * 1024 * 1024);` },
});
await pause(500);
const after = rssMb();
await pause(3000);
const later = rssMb();
await writer.close();
await child.status;
await reading;
Deno.removeSync(ws, { recursive: true });

const fmt = (mb: number) => `${mb.toFixed(0)} MB (${(mb / idle).toFixed(2)}× idle)`;
console.log(
  `pml stdio resident memory, one ${MB} MB pml:execute result (${
    (reply.length / 1e6).toFixed(0)
  } MB reply)`,
);
console.log(`  idle before          ${idle.toFixed(0)} MB (baseline)`);
console.log(`  0.5 s after result   ${fmt(after)}`);
console.log(`  3.5 s after result   ${fmt(later)}`);
figure({
  id: "8-large-result",
  what: "resident memory of `pml stdio` 3.5 s after one 100 MB `pml:execute` result",
  now: `${later.toFixed(0)} MB (idle before: ${idle.toFixed(0)} MB)`,
  target: "(anchor)",
  bench: "large_result",
});
