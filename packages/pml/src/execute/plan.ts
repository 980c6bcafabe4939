import { analyzeCode } from "../analysis/mod.ts";
import type { Analysis, AnalysisError } from "../analysis/types.ts";
import type { Routing } from "../routing/routing.ts";

/** Where and how `pml:execute` code runs. */
export type ExecutionPlan =
  | { readonly mode: "local"; readonly analysis: Analysis }
  | { readonly mode: "error"; readonly error: AnalysisError };

/**
 * Decides how to run `pml:execute` code (DESIGN §9). Today: the package analyses the code itself
 * and runs it locally, each `mcp.*` call routed by the gateway (client tools to local targets,
 * server tools to the cloud target).
 *
 * Seam for the cloud: when a cloud is configured, this is where the package will first send the
 * code to the server (`pml:execute` with `X-PML-Client: package`). The server answers either with
 * the result (every tool `server`: it ran the code itself; a plan `{mode: "remote", result}`) or
 * with `{"status":"execute_locally", code, tools_used, client_tools, dag}`, which maps to the
 * `local` plan below. The local analysis remains the fallback when the server is unreachable.
 */
export function planExecution(
  code: string,
  opts: { routeOf: (toolId: string) => Routing },
): ExecutionPlan {
  const analysis = analyzeCode(code, { routeOf: opts.routeOf });
  return analysis.ok ? { mode: "local", analysis } : { mode: "error", error: analysis.error };
}
