/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in the root
 * package.json) against `bin/pml serve` on loopback. Scenarios that need fixture tools, prompts,
 * resources, logging or completions do not apply to a gateway (see docs/conformance.md); the
 * applicable ones must pass every check.
 */
import { join } from "node:path";
import { assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { spawnServe } from "./_serve.ts";

const REPO = join(import.meta.dirname!, "..", "..");
const SUITE = join(REPO, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const APPLICABLE = [
  "server-initialize",
  "ping",
  "tools-list",
  "server-sse-multiple-streams",
  "dns-rebinding-protection",
];

interface Check {
  readonly name: string;
  readonly status: string;
  readonly errorMessage?: string;
}

Deno.test("MCP conformance suite: the applicable scenarios pass against pml serve", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"], ask: [], deny: [] } });
  await using serve = await spawnServe(ws);
  const failures: string[] = [];
  for (const scenario of APPLICABLE) {
    const out = join(ws.root, "results", scenario);
    const run = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", SUITE, "server", "--url", serve.url, "--scenario", scenario, "-o", out],
      cwd: REPO,
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const dirs = [...Deno.readDirSync(out)];
    if (dirs.length === 0) {
      failures.push(`${scenario}: no result (${new TextDecoder().decode(run.stderr).slice(-300)})`);
      continue;
    }
    const checks: Check[] = JSON.parse(
      Deno.readTextFileSync(join(out, dirs[0].name, "checks.json")),
    );
    if (checks.length === 0) failures.push(`${scenario}: no checks`);
    for (const c of checks) {
      if (c.status !== "SUCCESS" && c.status !== "INFO") {
        failures.push(`${scenario}/${c.name}: ${c.status} ${c.errorMessage ?? ""}`);
      }
    }
  }
  assertEquals(failures, []);
});
