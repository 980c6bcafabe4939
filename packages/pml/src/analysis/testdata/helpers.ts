/** Helpers of the analysis tests (no tests here). */
import { ok } from "node:assert/strict";
import { type Analysis, analyzeCode, type Routing } from "../mod.ts";

/** DESIGN §6: these namespaces run on the server; everything else (unknown included) on the client. */
const SERVER_NS = new Set(["pml", "json", "math", "text", "tavily", "exa", "github", "slack"]);

export function routeOf(toolId: string): Routing {
  return SERVER_NS.has(toolId.slice(0, toolId.indexOf(":"))) ? "server" : "client";
}

/** Analyses `code` and asserts success. */
export async function analyze(code: string): Promise<Analysis> {
  const a = await analyzeCode(code, { routeOf });
  ok(a.ok, `expected the analysis to succeed, got ${JSON.stringify(a)}`);
  return a;
}

/** `tool -> dependsOn tools` for code where each tool is called once. */
export function depsByTool(a: Analysis): Record<string, string[]> {
  const toolOf = new Map(a.tasks.map((t) => [t.id, t.tool]));
  return Object.fromEntries(a.tasks.map((t) => [t.tool, t.dependsOn.map((d) => toolOf.get(d)!)]));
}
