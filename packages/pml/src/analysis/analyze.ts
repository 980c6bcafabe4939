import { parseBody } from "./_parse.ts";
import { newState } from "./_state.ts";
import { walkProgram } from "./_walk.ts";
import type { AnalysisResult, AnalyzeOptions, Routing, ToolTask } from "./types.ts";

const byId = (a: string, b: string) => Number(a.slice(1)) - Number(b.slice(1));

/**
 * Statically analyses `pml:execute` code, a TypeScript function body (top-level `return` and
 * `await` allowed) that calls tools as `mcp.namespace.action(args)`: finds every call site (through
 * aliases, destructuring, callbacks, loops, optional chaining and string keys), builds the DAG of
 * tool tasks from data flow, and decides the routing.
 *
 * Never throws for bad code: failures come back as `{ ok: false, error }` with code `EMPTY_CODE`
 * (empty or whitespace-only code) or `SYNTAX_ERROR` (with 1-based `line`/`column` and the parser's
 * message). Uses of `mcp` that cannot be resolved statically (`mcp[name]`, `mcp` passed to a
 * function or reassigned, …) are listed in `dynamic` and force `client` routing.
 *
 * @example
 * ```ts
 * const a = await analyzeCode(
 *   `const text = await mcp.filesystem.read_file({ path: "a.json" });
 *    return await mcp.json.parse({ text });`,
 *   { routeOf: (id) => (id.startsWith("filesystem:") ? "client" : "server") },
 * );
 * if (a.ok) {
 *   a.routing; // "client"
 *   a.tasks; // [{ id: "t1", tool: "filesystem:read_file", dependsOn: [] , …},
 *            //  { id: "t2", tool: "json:parse", dependsOn: ["t1"], … }]
 * }
 * ```
 */
export async function analyzeCode(
  code: string,
  opts: AnalyzeOptions,
): Promise<AnalysisResult> {
  if (code.trim() === "") {
    return {
      ok: false,
      error: { code: "EMPTY_CODE", message: "Cannot analyse code: it is empty" },
    };
  }
  const parsed = await parseBody(code);
  if ("error" in parsed) return { ok: false, error: parsed.error };

  const st = newState();
  walkProgram(parsed.program, st);

  const routes = new Map<string, Routing>();
  for (const tool of st.tools) routes.set(tool, opts.routeOf(tool));
  const tasks: ToolTask[] = st.graph.tasks.map((t) => ({
    id: t.id,
    tool: t.tool,
    routing: routes.get(t.tool)!,
    line: t.line,
    column: t.column,
    dependsOn: [...t.deps].sort(byId),
    inLoop: t.inLoop,
    ...(t.args ? { args: t.args } : {}),
  }));
  const toolsUsed = [...st.tools];
  const clientTools = toolsUsed.filter((t) => routes.get(t) === "client");
  const serverTools = toolsUsed.filter((t) => routes.get(t) === "server");
  const routing: Routing = clientTools.length > 0 || st.dynamic.length > 0 ? "client" : "server";
  return { ok: true, tasks, toolsUsed, clientTools, serverTools, routing, dynamic: st.dynamic };
}
