/** Where a tool runs: on the user's machine (`client`) or on the PML server (`server`). */
export type Routing = "client" | "server";

/** Options of {@link analyzeCode}. */
export interface AnalyzeOptions {
  /** Routing of one tool id (`namespace:action`); unknown tools should answer `"client"`. */
  routeOf: (toolId: string) => Routing;
}

/** One `mcp.ns.action(args)` call site of the analysed code. */
export interface ToolTask {
  /**
   * `t1`, `t2`, … in walk order: source order, arguments before the call that receives them. A
   * task in a function defined earlier may depend on a later id (the function runs when called).
   */
  id: string;
  /** Tool id `namespace:action`. */
  tool: string;
  /** Routing of `tool`, from `AnalyzeOptions.routeOf`. */
  routing: Routing;
  /** 1-based position of the call expression in the code. */
  line: number;
  column: number;
  /**
   * Ids of the tasks whose results flow into this call's arguments or into a condition that
   * guards it (data flow through variables, destructuring, member access, object mutation and
   * helper functions). Sorted by id. Loop-carried flows are not modelled.
   */
  dependsOn: string[];
  /** True when the call site may run several times (loop body, `.map`-style callback). */
  inLoop: boolean;
  /**
   * The arguments the call can have, when each is known before the code runs: written as a
   * literal object (`{ path: "a.txt" }`), or made of `const` names bound to literals and of the
   * elements of a literal array a `for … of` loops over (`{ path: \`src/${f}\` }`: one entry per
   * element). At most 16. Absent when any part is computed.
   */
  args?: Record<string, unknown>[];
}

/** A use of `mcp` that the analysis cannot resolve to tool ids; it forces `client` routing. */
export interface DynamicAccess {
  line: number;
  column: number;
  /** Why the access cannot be resolved, e.g. `computed namespace name on "mcp"`. */
  reason: string;
}

/** Successful analysis of `pml:execute` code. */
export interface Analysis {
  ok: true;
  /** One task per call site; `dependsOn` makes them a DAG. */
  tasks: ToolTask[];
  /** Unique tool ids in order of first appearance. */
  toolsUsed: string[];
  clientTools: string[];
  serverTools: string[];
  /** `client` if any tool routes client or any dynamic access is present, else `server`. */
  routing: Routing;
  dynamic: DynamicAccess[];
}

/** Codes of analysis failures (a subset of the `pml:execute` error codes of DESIGN §9). */
export type AnalysisErrorCode = "EMPTY_CODE" | "SYNTAX_ERROR";

/** Why the code could not be analysed; `line`/`column` (1-based) for syntax errors. */
export interface AnalysisError {
  code: AnalysisErrorCode;
  message: string;
  line?: number;
  column?: number;
}

/** Failed analysis. */
export interface AnalysisFailure {
  ok: false;
  error: AnalysisError;
}

/** Result of {@link analyzeCode}: discriminated on `ok`. */
export type AnalysisResult = Analysis | AnalysisFailure;

/** The form every tool id must have. */
export const TOOL_ID_PATTERN: RegExp = /^[A-Za-z0-9_-]+:[A-Za-z0-9_-]+$/;
