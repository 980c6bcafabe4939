/**
 * Messages between the gateway (host) and a sandbox subprocess, one JSON object per line:
 * host → sandbox on its stdin, sandbox → host on its stdout.
 *
 * - `call`: run `action` of module `ns` with `args`; answered by one `result` with the same id.
 * - `mcp`: inside a call, the module called `mcp.<ns>.<action>(args)`; the host runs it through the
 *   whole pipeline (permission, routing) and answers `mcp_result` with the same id.
 * - `sample`: inside a call, the module called `ctx.createMessage(params)` (MCP sampling); the host
 *   answers it as a sampling request of the module's namespace (`sampling/sampling.ts`) with an
 *   `mcp_result` of the same id (the ids of `mcp` and `sample` are one sequence).
 * - Read-ahead (`pml:execute`, `execute/read_ahead.ts`): a `call` may list `ahead`, the keys
 *   (`<tool> <canonical JSON args>`) of calls the host has already started. When the module makes
 *   one of them, the runner sends `mcp_ahead` with its index (the host records the call) instead
 *   of `mcp`, and takes its outcome from the `ahead_result` the host sends once it has it (before
 *   or after). Each index is taken at most once; an outcome never taken is dropped.
 * - `cancel`: the client cancelled call `id` (`notifications/cancelled`). The runner aborts the
 *   call's `ctx.signal`; a module that honours it ends the call (`shell:exec` kills its command's
 *   process group) and the call is still answered by its `result`. Other calls go on.
 */
export type HostMessage =
  | {
    t: "call";
    id: number;
    ns: string;
    action: string;
    args: unknown;
    ctx: { workspace: string };
    ahead?: string[];
  }
  | { t: "cancel"; id: number }
  | { t: "mcp_result"; id: number; ok: true; value: unknown }
  | { t: "mcp_result"; id: number; ok: false; error: WireError }
  | { t: "ahead_result"; callId: number; index: number; ok: true; value: unknown }
  | { t: "ahead_result"; callId: number; index: number; ok: false; error: WireError };

export type SandboxMessage =
  | { t: "ready" }
  | { t: "result"; id: number; ok: true; value: unknown }
  | { t: "result"; id: number; ok: false; error: WireError }
  | { t: "mcp"; id: number; callId: number; tool: string; args: unknown }
  | { t: "mcp_ahead"; callId: number; index: number }
  | { t: "sample"; id: number; callId: number; params: unknown };

/** An error as it crosses the pipe. `name` is the JS error class (`NotCapable`, `TypeError`, …). */
export interface WireError {
  name: string;
  message: string;
  code?: string;
}
