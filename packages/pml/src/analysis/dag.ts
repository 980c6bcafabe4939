import type { Analysis } from "./types.ts";

/** The `dag` field of an `execute_locally` answer (DESIGN §9). */
export interface ExecuteLocallyDag {
  tasks: { id: string; tool: string; dependsOn: string[] }[];
}

/**
 * The wire shape of the task DAG: `{"tasks":[{"id","tool","dependsOn"}]}`.
 *
 * @example
 * ```ts
 * const a = await analyzeCode(code, { routeOf });
 * if (a.ok) JSON.stringify({ status: "execute_locally", code, dag: toExecuteLocallyDag(a) });
 * ```
 */
export function toExecuteLocallyDag(analysis: Analysis): ExecuteLocallyDag {
  return {
    tasks: analysis.tasks.map((t) => ({ id: t.id, tool: t.tool, dependsOn: [...t.dependsOn] })),
  };
}
