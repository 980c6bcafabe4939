/**
 * The surface beyond tools (docs/surface.md): a `resources/read` and a `prompts/get` of
 * server-everything (Streamable HTTP, its own Node process) through a spawned `pml stdio`, against
 * the same SDK client on the server direct, in the same run, alternating.
 *
 * `deno task bench surface [rounds]`
 */
import { join } from "node:path";
import { trustContentSync } from "../packages/pml/src/config/trust_store.ts";
import { Client } from "../packages/pml/src/sdk/client.ts";
import { StdioClientTransport } from "../packages/pml/src/sdk/stdio_client.ts";
import { StreamableHTTPClientTransport } from "../packages/pml/src/sdk/http_client.ts";
import { startEverything } from "../packages/server/tests/upstream.ts";
import { figure, median, ratio, row } from "./_stats.ts";

const ROUNDS = Number(Deno.args[0] ?? 300);
const root = join(import.meta.dirname!, "..");
const everything = await startEverything();
const ws = Deno.makeTempDirSync({ prefix: "pml-bench-surface-" });
Deno.mkdirSync(join(ws, ".git"));
const pmlJson = JSON.stringify({
  permissions: { allow: ["everything"] },
  private_mcps: { everything: { type: "http", proxyTo: everything.url } },
});
Deno.writeTextFileSync(join(ws, ".pml.json"), pmlJson);
trustContentSync(join(ws, ".pml"), Deno.realPathSync(ws), pmlJson); // as `pml trust` would

const direct = new Client({ name: "bench-direct", version: "1" }, { capabilities: {} });
await direct.connect(new StreamableHTTPClientTransport(new URL(everything.url)));
const viaPml = new Client({ name: "bench-pml", version: "1" }, { capabilities: {} });
await viaPml.connect(
  new StdioClientTransport({
    command: join(root, "bin", "pml"),
    args: ["stdio"],
    cwd: ws,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: ws, PML_WORKSPACE: ws },
    stderr: "ignore",
  }),
);

/** The same request on each side, `prefix`ed names and URIs through PML. */
const work = {
  // The anchor: a tool call on the same path (tools/call goes PML's fast way, `transport_calls.ts`).
  tool: {
    direct: () => direct.callTool({ name: "echo", arguments: { message: "hi" } }),
    pml: () => viaPml.callTool({ name: "everything__echo", arguments: { message: "hi" } }),
  },
  read: {
    direct: () => direct.readResource({ uri: "demo://resource/dynamic/text/1" }),
    pml: () => viaPml.readResource({ uri: "demo://everything/resource/dynamic/text/1" }),
  },
  prompt: {
    direct: () => direct.getPrompt({ name: "args-prompt", arguments: { city: "Lyon" } }),
    pml: () => viaPml.getPrompt({ name: "everything__args-prompt", arguments: { city: "Lyon" } }),
  },
};

const samples: Record<string, { direct: number[]; pml: number[] }> = {};
for (const [name, sides] of Object.entries(work)) {
  for (let i = 0; i < 30; i++) await Promise.all([sides.direct(), sides.pml()]); // warm up
  const s = samples[name] = { direct: [] as number[], pml: [] as number[] };
  for (let i = 0; i < ROUNDS; i++) {
    for (const side of ["direct", "pml"] as const) {
      const t = performance.now();
      await sides[side]();
      s[side].push(performance.now() - t);
    }
  }
}
await viaPml.close();
await direct.close();
await everything.close();
Deno.removeSync(ws, { recursive: true });

console.log(`surface of server-everything (Streamable HTTP), ${ROUNDS} rounds, median:`);
for (const [name, s] of Object.entries(samples)) {
  console.log(row(`${name} direct`, s.direct));
  console.log(row(`${name} through pml stdio`, s.pml, s.direct));
}
/** A read or a prompt get may cost what a tool call through PML costs, and 15 % more. */
const SLACK = 1.15;
const toolRatio = median(samples.tool.pml) / median(samples.tool.direct);
/** What PML adds to one request, in ms: the hop and its pipeline, whatever the server costs. */
const added = (s: { direct: number[]; pml: number[] }) => median(s.pml) - median(s.direct);
const label = { read: "a `resources/read`", prompt: "a `prompts/get`" } as const;
for (const name of ["read", "prompt"] as const) {
  const s = samples[name];
  const r = median(s.pml) / median(s.direct);
  figure({
    id: `surface-${name}`,
    what: `${label[name]} of server-everything through pml stdio vs the server direct`,
    now: `${ratio(median(s.pml), median(s.direct))} (${median(s.direct).toFixed(2)} ms direct, +${
      added(s).toFixed(2)
    } ms); a tool call on the same path: ${toolRatio.toFixed(2)}× (+${
      added(samples.tool).toFixed(2)
    } ms)`,
    target: `≤ the tool call's × ${SLACK}`,
    met: r <= toolRatio * SLACK,
    bench: "surface",
  });
}
