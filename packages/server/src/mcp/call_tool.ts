/**
 * `tools/call` on the server: resolves the name (exposed name or tool id) in the catalog and runs
 * the tool where it lives: `pml:search` here, server-routed std modules in process, http tools
 * on their remote MCP server. Tool failures are `isError` results with a `code`.
 *
 * Std modules (`registry/std/json.ts`, `math.ts`, `text.ts`) run in the server process: they are
 * code shipped in this repository, import nothing, and touch no file, network or environment.
 * Published capabilities and client-routed tools are never run here.
 *
 * @module
 */
import type { ByokKeys } from "./byok.ts";
import { redact } from "./byok.ts";
import { type ProxyCaller, type ProxyDeps, proxyToolCall } from "./http_proxy.ts";
import { errorResult, valueResult } from "./results.ts";
import { parseSearchArgs, SEARCH_TOOL, searchTools } from "./search.ts";
import type { CallToolResult } from "./sdk/types.ts";
import type { CatalogSnapshot, CatalogTool } from "./tool_catalog.ts";

/** Deepest chain of nested `mcp.ns.action()` calls from std modules. */
const MAX_DEPTH = 8;

/** What a call needs: the catalog, this request's keys, the proxy settings. */
export interface CallContext extends ProxyDeps {
  readonly snapshot: CatalogSnapshot;
  readonly keys: ByokKeys;
  /** The caller of a call from the endpoint (absent for nested calls: nothing streams). */
  readonly caller?: ProxyCaller;
}

/** True for tools this server runs itself (listed by `tools/list`). */
export function isServerTool(tool: CatalogTool): boolean {
  return (tool.kind === "std" && tool.routing === "server" && tool.run !== undefined) ||
    tool.kind === "http";
}

/** Runs the tool called `name` with `args`. */
export async function callTool(
  name: string,
  args: Record<string, unknown>,
  context: CallContext,
  depth = 0,
): Promise<CallToolResult> {
  if (name === SEARCH_TOOL.id || name === SEARCH_TOOL.name) {
    try {
      const results = searchTools(context.snapshot, parseSearchArgs(args));
      return valueResult({ results });
    } catch (error) {
      return errorResult("INVALID_ARGUMENTS", (error as Error).message);
    }
  }
  const tool = context.snapshot.byName.get(name);
  if (!tool) {
    return errorResult(
      "UNKNOWN_TOOL",
      `Unknown tool "${name.slice(0, 200)}": use pml:search to find tool ids`,
    );
  }
  if (tool.kind === "http") {
    // A nested call (from a std module) has no stream of its own; its session is still the caller's.
    const caller = depth === 0 ? context.caller : { owner: context.caller?.owner };
    return await proxyToolCall(tool, args, context.keys, context, caller);
  }
  if (!isServerTool(tool)) {
    return errorResult(
      "CLIENT_TOOLS_REQUIRE_PACKAGE",
      `Tool "${tool.id}" runs on the user's machine (routing "${tool.routing}"), not on the PML ` +
        `server: call it through the pml package (pml stdio or pml serve)`,
      { tool: tool.id, routing: tool.routing },
    );
  }
  try {
    const mcp = nestedCalls(context, depth + 1);
    return valueResult(await tool.run!(args, { mcp }));
  } catch (error) {
    // The std modules check their arguments and throw a TypeError naming the bad one: the same
    // code and words as the package gives for a local tool (`invalidArguments`), wherever it runs.
    if (error instanceof TypeError) {
      const message = redact(
        `Invalid arguments for "${tool.id}": ${error.message}`,
        context.keys,
      );
      return errorResult("INVALID_ARGUMENTS", message, { tool: tool.id });
    }
    const message = redact(
      `"${tool.id}" failed: ${(error as Error)?.message ?? error}`,
      context.keys,
    );
    return errorResult("CODE_ERROR", message, { tool: tool.id });
  }
}

/**
 * The `mcp.ns.action(args)` proxy handed to std modules: each call goes through
 * {@link callTool} again and resolves with the structured result (or rejects with its error).
 */
function nestedCalls(context: CallContext, depth: number): unknown {
  const namespace = (ns: string) =>
    new Proxy({}, {
      get: (_, action) =>
        action === "then" ? undefined : async (args: Record<string, unknown> = {}) => {
          if (depth > MAX_DEPTH) throw new RangeError(`Nested mcp calls deeper than ${MAX_DEPTH}`);
          const result = await callTool(`${ns}:${String(action)}`, args, context, depth);
          const structured = result.structuredContent as Record<string, unknown> | undefined;
          if (result.isError) throw new Error(String(structured?.message ?? "tool failed"));
          if (structured && Object.keys(structured).length === 1 && "result" in structured) {
            return structured.result;
          }
          return structured ?? result.content;
        },
    });
  return new Proxy({}, { get: (_, ns) => ns === "then" ? undefined : namespace(String(ns)) });
}
