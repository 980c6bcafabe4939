/**
 * `warmUpAnalysis()`: analyses a small snippet in the shapes agents write (sequential awaits on
 * literal arguments, a `Promise.all` over a `map`), so that the parser and the analysis have their
 * compiled code again before the next `pml:execute` needs it.
 *
 * `pml stdio` runs it right after its idle collection, and with each look-ahead of the sandbox
 * policies (every 0.8 s for 10 s after a message), once a `pml:execute` loaded the analysis
 * (`ingress/stdio.ts`, `execute/plan.ts` `warmUpLoadedAnalysis`): that collection is V8's
 * memory-reducing one, which also throws away compiled code, and the first `pml:execute` after an
 * agent's pause paid for compiling the analysis again (0.40 → 1.07 ms of analysis after the
 * collection, 0.6 ms with this warm-up first; docs/speed.md); a pause without a collection still
 * cost it ~0.3 ms, which the runs with the look-ahead keep off the call. Calls made directly do not
 * analyse code, so the pause cost code mode alone.
 *
 * @module
 */
import { analyzeCode } from "./analyze.ts";

const WARM_UP_SNIPPET = `
  const a = await mcp.pml_warm_up.read({ path: "a" });
  const b = await mcp.pml_warm_up.read({ path: a.next ?? "b" });
  const items = ["c", "d"];
  const rest = await Promise.all(items.map((path) => mcp.pml_warm_up.read({ path })));
  return [a, b, ...rest].length;`;

/** Runs the analysis once on a fixed snippet; resolves when done (it never rejects). */
export async function warmUpAnalysis(): Promise<void> {
  await analyzeCode(WARM_UP_SNIPPET, { routeOf: () => "client" }).catch(() => undefined);
}
