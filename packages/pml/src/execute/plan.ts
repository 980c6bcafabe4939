import type { Analysis, AnalysisError } from "../analysis/types.ts";
import type { Decision } from "../permission/patterns.ts";
import type { Routing } from "../routing/routing.ts";
import type { CallToolResult } from "../sdk/types.ts";
import type { ExecuteArgs } from "./args.ts";

/**
 * The static analysis (13 modules), imported with the first `pml:execute`: `pml stdio` answers its
 * first `tools/list` without it (docs/speed.md, "Cold start").
 */
let analysisModule: Promise<typeof import("../analysis/mod.ts")> | undefined;

/**
 * Compiles the analysis again after the gateway's idle collection, which drops compiled code
 * (`analysis/warm_up.ts`), once a `pml:execute` has loaded it: a gateway whose agent never sends
 * code never loads the parser for it.
 */
export function warmUpLoadedAnalysis(): void {
  if (analysisModule) void analysisModule.then((m) => m.warmUpAnalysis(), () => undefined);
}

/** Why the code runs in the package. */
export type LocalReason =
  /** No cloud configured (no API key): local-only mode. */
  | "no_cloud"
  /** The server answered `execute_locally`: the code calls tools of this machine. */
  | "execute_locally"
  /**
   * The code calls a tool of a namespace the platform routing table names `client`: the server
   * would answer `execute_locally`, so it is not asked (one round trip less).
   */
  | "client_tools"
  /** A tool of the code is not `allow`ed: each call must pass the user's permissions here. */
  | "permissions"
  /** The cloud could not be asked (unreachable, refused the key, a key missing): offline mode. */
  | "offline";

/** Where and how `pml:execute` code runs. */
export type ExecutionPlan =
  | { readonly mode: "local"; readonly analysis: Analysis; readonly reason: LocalReason }
  /** The server answered for good: it ran the code (all tools `server`), or refused it. */
  | { readonly mode: "remote"; readonly result: CallToolResult }
  | { readonly mode: "error"; readonly error: AnalysisError };

/** The cloud side of planning: `pml:execute` sent with `X-PML-Client: package`. */
export interface RemoteExecutor {
  executeRemote(
    args: Record<string, unknown>,
    toolsUsed: readonly string[],
    channel: { signal?: AbortSignal },
  ): Promise<CallToolResult>;
}

/** What planning needs: routing and permissions of this machine, and the cloud when configured. */
export interface PlanDeps {
  readonly routeOf: (toolId: string) => Routing;
  readonly permissionOf: (toolId: string) => Decision;
  /**
   * True for a tool of a namespace the platform routing table (the server's own `GET
   * /api/routing`) names `client`; default: none.
   */
  readonly isClientTool?: (toolId: string) => boolean;
  /** Absent in local-only mode. */
  readonly cloud?: RemoteExecutor;
}

/**
 * Decides where `pml:execute` code runs (DESIGN §9).
 *
 * The package analyses the code first (~0.2 ms): a syntax error or empty code is answered without
 * a round trip (the server runs the same analyser and would answer the same). Then, with a cloud
 * configured, the code goes to the server with `X-PML-Client: package`; the server either runs it
 * (every tool is a server tool: the result comes back as is) or answers `execute_locally`, and
 * the package runs it in its sandbox, each `mcp.*` call routed by the gateway.
 *
 * The server is not asked when the code calls a tool of a namespace the platform routing table
 * (the same table the server routes by) names `client`: its answer is known (`execute_locally`),
 * and asking would cost a round trip for nothing (see docs/speed.md). Code whose tools are all
 * `server`, or of namespaces the table does not name (the server may serve them), is still sent.
 *
 * One exception, for the user's permissions (DESIGN §5, every call is checked): a server
 * execution cannot ask the human about a call, nor honour a `deny`, so code using any tool that is
 * not `allow` is never handed to the server; it runs here, where each call is checked (and server
 * tools still reach the cloud one call at a time). Without a reachable cloud the package runs the
 * code itself: local tools work, server tools fail with `CLOUD_UNREACHABLE`.
 */
export async function planExecution(
  args: ExecuteArgs,
  deps: PlanDeps,
  channel: { signal?: AbortSignal } = {},
): Promise<ExecutionPlan> {
  const { analyzeCode } = await (analysisModule ??= import("../analysis/mod.ts"));
  const analysis = await analyzeCode(args.code, { routeOf: deps.routeOf });
  if (!analysis.ok) return { mode: "error", error: analysis.error };
  const local = (reason: LocalReason): ExecutionPlan => ({ mode: "local", analysis, reason });
  if (!deps.cloud) return local("no_cloud");
  if (deps.isClientTool && analysis.toolsUsed.some(deps.isClientTool)) return local("client_tools");
  if (analysis.toolsUsed.some((id) => deps.permissionOf(id) !== "allow")) {
    return local("permissions");
  }
  const wire: Record<string, unknown> = { code: args.code, timeout_ms: args.timeoutMs };
  if (args.intent !== undefined) wire.intent = args.intent;
  let answer: CallToolResult;
  try {
    answer = await deps.cloud.executeRemote(wire, analysis.toolsUsed, channel);
  } catch {
    return local("offline"); // a protocol-level failure of the cloud: same as unreachable
  }
  const body = answer.structuredContent as { status?: unknown; code?: unknown } | undefined;
  if (body?.status === "execute_locally") return local("execute_locally");
  if (answer.isError && typeof body?.code === "string" && LOCAL_FALLBACK.has(body.code)) {
    return local("offline");
  }
  return { mode: "remote", result: answer };
}

/** Cloud answers after which the package runs the code itself. */
const LOCAL_FALLBACK: ReadonlySet<string> = new Set([
  "CLOUD_UNREACHABLE",
  "CLOUD_AUTH",
  "CLOUD_API_KEY_REQUIRED",
  "BYOK_MISSING",
  // A server without pml:execute (older or other) answers this for the meta tool itself; for a
  // tool of the code, the local run reaches the same answer at that call.
  "UNKNOWN_TOOL",
]);
