/**
 * Read-ahead of `pml:execute` code: the reads the analysis can name before the code runs are
 * started at once, side by side, and each is handed to the code when it makes that very call.
 *
 * Code written as `await mcp.filesystem.read_file({ path: "a" })`, then `"b"`, then `"c"` waits for
 * each read before it asks for the next: three trips code → gateway → tool and back, one after the
 * other. The analysis already knows those three calls and their arguments (`ToolTask.args`: literals,
 * `const` names bound to them, elements of a literal array a loop or a `map` callback runs over), so
 * the gateway asks for all three as soon as the plan allows the code, starts the code with the
 * list of what it started, and sends each result to the sandbox as it comes. A call of the code
 * that is on the list takes its result there, without a round trip: the runner only tells the
 * gateway which one it took, for the record (`sandbox/protocol.ts`, `mcp_ahead`).
 *
 * Only when nothing can tell the difference. Code is read ahead only if every tool it can reach
 * is one that cannot change anything (a std tool with read access), the user allows each without a
 * question, and no `mcp` use is dynamic (a computed name could be any tool). Then no call of the
 * code can change what a read returns, and a read the code ends up not making (a branch it did not
 * take) changed nothing either. Each read runs through the same gateway pipeline as the code's own
 * call would (permission, path confinement, audit, sandbox), with the same arguments; the code gets
 * the result of a call with exactly its tool and arguments (canonical JSON), each at most once. A
 * wrong guess of the analysis (an array changed before the loop) only costs a read: no call
 * matches it, and the code's own call goes live.
 */
import type { CallChannel } from "../gateway/gateway.ts";
import type { Analysis } from "../analysis/types.ts";
import type { Decision } from "../permission/patterns.ts";
import type { CallToolResult } from "../sdk/types.ts";
import { canonicalJson } from "../canonical_json.ts";
import { NOT_ASKED } from "../gateway/call_relay.ts";

/** Reads of one run started at most: a snippet with more reads gets the first ones ahead. */
export const MAX_READ_AHEAD = 16;

/** What choosing the reads needs from the gateway. */
export interface ReadAheadDeps {
  /** True for a tool that only reads (a std tool with read access). */
  readonly readsOnly: (toolId: string) => boolean;
  readonly permissionOf: (toolId: string) => Decision;
}

/** The calls of `analysis` to start ahead of the code; none unless it only reads. */
export function readsAhead(
  analysis: Analysis,
  deps: ReadAheadDeps,
): { readonly tool: string; readonly args: Record<string, unknown> }[] {
  if (analysis.dynamic.length) return [];
  if (!analysis.toolsUsed.every((t) => deps.readsOnly(t) && deps.permissionOf(t) === "allow")) {
    return [];
  }
  const calls: { tool: string; args: Record<string, unknown> }[] = [];
  for (const task of analysis.tasks) {
    for (const args of task.args ?? []) {
      if (calls.length < MAX_READ_AHEAD) calls.push({ tool: task.tool, args });
    }
  }
  return calls;
}

/** A read started ahead of the code: its key (as the runner computes it) and its result. */
export interface AheadRead {
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly key: string;
  readonly result: Promise<CallToolResult>;
}

/** Starts `calls` through `run` (the gateway pipeline), side by side. */
export function startReads(
  calls: readonly { readonly tool: string; readonly args: Record<string, unknown> }[],
  run: (tool: string, args: Record<string, unknown>) => Promise<CallToolResult>,
): AheadRead[] {
  return calls.map(({ tool, args }) => {
    const result = run(tool, args);
    result.catch(() => {}); // a read the code never takes must not be an unhandled rejection
    return { tool, args, key: aheadKey(tool, args), result };
  });
}

/** `<tool> <args as canonical JSON>`; the sandbox runner computes the same for the code's call. */
export function aheadKey(tool: string, args: unknown): string {
  return `${tool} ${canonicalJson(args ?? {})}`;
}

/**
 * The channel of a read started ahead: the run's cancel signal, and no question asked (a `.env`
 * file, even through a link, ends `NOT_ASKED`; the code's call is then made live, asked as any
 * call: `run_execution.ts`).
 */
export function aheadChannel(channel: CallChannel): CallChannel {
  return { signal: channel.signal, noQuestions: true };
}

/** True for the answer of a read ahead that would have asked a question (`aheadChannel`). */
export function notAsked(result: CallToolResult): boolean {
  return (result.structuredContent as { code?: unknown } | undefined)?.code === NOT_ASKED;
}
