/**
 * Static analysis of `pml:execute` code: parse → `mcp.*` calls → DAG of tool tasks → routing.
 * Shared by the package and the server.
 *
 * @module
 */
export { analyzeCode } from "./analyze.ts";
export { warmUpAnalysis } from "./warm_up.ts";
export { type ExecuteLocallyDag, toExecuteLocallyDag } from "./dag.ts";
export {
  type Analysis,
  type AnalysisError,
  type AnalysisErrorCode,
  type AnalysisFailure,
  type AnalysisResult,
  type AnalyzeOptions,
  type DynamicAccess,
  type Routing,
  TOOL_ID_PATTERN,
  type ToolTask,
} from "./types.ts";
