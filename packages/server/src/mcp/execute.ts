/**
 * `pml:execute` on the server (DESIGN §9): the code is analysed here with the package's analyser
 * (one implementation for both programs). Code whose every tool runs on this server executes in a
 * permission-less sandbox subprocess, its `mcp.*` calls answered by {@link callTool}; code that
 * calls any tool of the user's machine is handed back to the package (`execute_locally`), or
 * refused with `CLIENT_TOOLS_REQUIRE_PACKAGE` when the caller is not the package.
 *
 * `X-PML-Client: package` is a UX hint, not a security boundary (anyone can send it): the answer
 * it unlocks only describes the caller's own code. What protects the server is that the code runs
 * with no file, network, env or subprocess access, and that its calls are the same tool calls the
 * API key could make directly.
 *
 * @module
 */
import { analyzeCode, toExecuteLocallyDag } from "../../../pml/src/analysis/mod.ts";
import { executeInputSchema, parseExecuteArgs } from "../../../pml/src/execute/args.ts";
import { Journal } from "../../../pml/src/execute/journal.ts";
import { failureResult, successResult } from "../../../pml/src/execute/result.ts";
import { runAttempt } from "../../../pml/src/execute/run_execution.ts";
import { ExecSandboxPool, execSandboxSpec } from "../../../pml/src/execute/warm_pool.ts";
import { routeNamespace, type RoutingTable } from "../registry/routing_table.ts";
import type { Routing } from "../store/store.ts";
import { isServerTool } from "./call_tool.ts";
import { SEARCH_TOOL } from "./search.ts";
import type { CallToolResult } from "./sdk/types.ts";
import type { CatalogSnapshot } from "./tool_catalog.ts";

/** Header by which the PML package identifies itself (DESIGN §8). */
export const CLIENT_HEADER = "x-pml-client";

/** Tunables of server-side executions. */
export interface ServerExecuteOptions {
  /** Whole execution (default 30 s); `timeout_ms` lowers it. */
  readonly timeoutMs?: number;
  /** One `mcp.*` call of the code (default 20 s). */
  readonly rpcTimeoutMs?: number;
  /** Sandboxes running at once; more executions wait for a free one (default 4). */
  readonly maxConcurrent?: number;
}

/** What one `pml:execute` request needs from the MCP handler. */
export interface ExecuteRequest {
  readonly snapshot: CatalogSnapshot;
  /** `X-PML-Client: package` was sent. */
  readonly packageClient: boolean;
  /** Runs one nested call (the handler's `callTool` with this request's keys). */
  readonly callTool: (toolId: string, args: Record<string, unknown>) => Promise<CallToolResult>;
  readonly signal?: AbortSignal;
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_RPC_TIMEOUT_MS = 20_000;

const INSTALL =
  "Install the PML package (@casys/pml) and run `pml init` in your project: it adds `pml stdio` " +
  "to .mcp.json, and pml:execute sent through it runs these tools on your machine, under your " +
  "permissions, and the server tools here.";

/**
 * Runs `pml:execute` requests. Sandboxes come from a warm pool created on first use; `close()`
 * kills them (the server's shutdown, the end of a test).
 */
export class ServerExecutor {
  readonly #timeoutMs: number;
  readonly #rpcTimeoutMs: number;
  readonly #maxConcurrent: number;
  readonly #routing?: RoutingTable;
  #pool?: ExecSandboxPool;
  #running = 0;
  readonly #waiting: (() => void)[] = [];
  #closed = false;

  constructor(options: ServerExecuteOptions & { routing?: RoutingTable } = {}) {
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#rpcTimeoutMs = options.rpcTimeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;
    this.#maxConcurrent = Math.max(1, options.maxConcurrent ?? 4);
    this.#routing = options.routing;
  }

  /** The tool as `tools/list` shows it. */
  get tool() {
    return {
      id: "pml:execute",
      name: "pml__execute",
      description: "Run TypeScript code that calls tools as `await mcp.namespace.action(args)` " +
        "and `return`s a result. Code that uses only server tools runs here, in a sandbox with " +
        "no file, network, env or subprocess access; code that uses tools of your machine needs " +
        'the PML package. Returns {"status":"success","result","calls"} or ' +
        '{"status":"error","code","message"}.',
      inputSchema: executeInputSchema(this.#timeoutMs),
    };
  }

  /** Where `toolId` runs, seen from this server. */
  routeOf(snapshot: CatalogSnapshot, toolId: string): Routing {
    if (toolId === SEARCH_TOOL.id) return "server";
    const tool = snapshot.byName.get(toolId);
    if (tool) return isServerTool(tool) ? "server" : "client";
    const ns = toolId.slice(0, toolId.indexOf(":"));
    return this.#routing ? routeNamespace(this.#routing, ns) : "client";
  }

  /** Answers one `pml:execute` call. */
  async execute(args: Record<string, unknown>, req: ExecuteRequest): Promise<CallToolResult> {
    this.#pool?.wake();
    const parsed = parseExecuteArgs(args, this.#timeoutMs);
    if (!parsed.ok) return parsed.result;
    const { code, timeoutMs } = parsed.value;
    const analysis = await analyzeCode(code, { routeOf: (id) => this.routeOf(req.snapshot, id) });
    if (!analysis.ok) {
      const { code: errCode, message, line, column } = analysis.error;
      return failureResult(errCode, message, line ? { line, column } : {});
    }
    if (analysis.routing === "client") {
      const clientTools = analysis.clientTools;
      if (req.packageClient) {
        const body = {
          status: "execute_locally",
          code,
          tools_used: analysis.toolsUsed,
          client_tools: clientTools,
          dag: toExecuteLocallyDag(analysis),
        };
        return { content: [{ type: "text", text: JSON.stringify(body) }], structuredContent: body };
      }
      const why = clientTools.length > 0
        ? `it calls tools that run on the user's machine (${clientTools.join(", ")})`
        : "it reaches tools through names only known when it runs (mcp[name]), which may be " +
          "tools of the user's machine";
      return failureResult(
        "CLIENT_TOOLS_REQUIRE_PACKAGE",
        `This code cannot run on the PML server: ${why}. ${INSTALL}`,
        { client_tools: clientTools, install: INSTALL },
      );
    }
    // Meta tools (`pml:*`) are not in the catalog: the run answers or refuses them.
    const unknown = analysis.serverTools.filter((id) =>
      !id.startsWith("pml:") && !req.snapshot.byName.has(id)
    );
    if (unknown.length > 0) {
      return failureResult(
        "UNKNOWN_TOOL",
        `Unknown tool${unknown.length > 1 ? "s" : ""} ${
          unknown.map((t) => `"${t}"`).join(", ")
        }: use pml:search to find tool ids`,
        { tools: unknown },
      );
    }
    return await this.#run(code, timeoutMs, req);
  }

  /** Kills every sandbox (running executions fail) and waits until they are reaped. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const wake of this.#waiting.splice(0)) wake();
    await this.#pool?.close();
  }

  async #run(code: string, timeoutMs: number, req: ExecuteRequest): Promise<CallToolResult> {
    await this.#acquire();
    try {
      if (this.#closed) return failureResult("CODE_ERROR", "The PML server is shutting down");
      const pool = this.#pool ??= new ExecSandboxPool(execSandboxSpec(), {
        onStderr: () => {}, // the code's console output is the caller's, not the server log's
      });
      const outcome = await runAttempt(
        {
          takeSandbox: () => pool.take(),
          runTool: (id, args) => req.callTool(id, (args ?? {}) as Record<string, unknown>),
          routeOf: (id) => this.routeOf(req.snapshot, id),
          rpcTimeoutMs: this.#rpcTimeoutMs,
          workspace: "/",
        },
        { code, timeoutMs, journal: new Journal() },
        { signal: req.signal },
      );
      if (outcome.kind === "success") return successResult(outcome.result, outcome.calls);
      if (outcome.kind === "error") return failureResult(outcome.code, outcome.message);
      // Server tools never ask for approval; a pause would be a bug, not a reason to hang.
      return failureResult("CODE_ERROR", "pml:execute cannot pause for an approval on the server");
    } finally {
      this.#release();
    }
  }

  async #acquire(): Promise<void> {
    while (this.#running >= this.#maxConcurrent && !this.#closed) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    this.#running++;
  }

  #release(): void {
    this.#running--;
    this.#waiting.shift()?.();
  }
}
