/**
 * Sampling for local MCPs (issue "sampling", story 14.6, docs/sampling.md): a stdio dependency
 * that sends `sampling/createMessage` during a tool call (or a registry module that calls
 * `ctx.createMessage`) gets an answer from an LLM, after PML decided it may.
 *
 * 1. **Permission.** Sampling by MCP `x` is the permission id `sampling:x` in `.pml.json` (so
 *    `deny`, `allow` and `ask` patterns work as for tools). `ask` is a `sampling` approval through
 *    elicitation (the MCP, the model path, the prompt's size; never its text); `always` adds the
 *    id to `allow`. Without elicitation it is refused with how to allow it: the request is nested
 *    in a tool call, which cannot return `approval_required` halfway.
 * 2. **Path.** The connected client's own sampling when it declared the capability (the request,
 *    result and errors travel unchanged; cancellation and progress are forwarded); otherwise the
 *    user's LLM API key (Anthropic Messages or OpenAI chat completions, see `llm_api.ts`).
 * 3. **Loop.** When the MCP declares `allowedToolPatterns` and the request brings no tools of its
 *    own, the model is offered the gateway's tools that match, each tool use runs through the
 *    whole gateway pipeline (permissions, approvals, routing), and the loop is bounded in turns,
 *    output tokens and time. The bounds and what was used are in the result's `_meta`.
 * 4. **Bounds of a call.** The model requests of one tool call are counted together (32), a prompt
 *    over 1,000,000 characters is refused unsent, and the BYOK path asks for at most the output
 *    bound in `maxTokens`.
 *
 * Every request writes an audit line (`sampling`): the MCP, the path, the decision, counts, an
 * error's code; never the prompt, the answer or an error's text.
 *
 * @module
 */
import type {
  CallToolResult,
  CreateMessageRequestParams,
  CreateMessageResult,
  SamplingMessage,
  Tool,
} from "../sdk/types.ts";
import { isPmlError, PmlError } from "../errors.ts";
import type { AuditLog } from "../audit/audit.ts";
import type { ApprovalDecision, ApprovalRequest } from "../permission/approvals.ts";
import type { Decision } from "../permission/patterns.ts";
import { matchesPattern } from "../permission/patterns.ts";
import { callLlm, chooseEndpoint, PROVIDERS } from "./llm_api.ts";
import { exposedName } from "../gateway/names.ts";
import {
  DEFAULT_BOUNDS,
  overBudget,
  promptSize,
  type SamplingBounds,
  type SamplingBudget,
} from "./bounds.ts";

export { DEFAULT_BOUNDS, type SamplingBounds, type SamplingBudget } from "./bounds.ts";

/** Sends a sampling request to the connected client (present when it declared `sampling`). */
export type ClientSample = (
  params: CreateMessageRequestParams,
  opts: { signal?: AbortSignal; onprogress?: SamplingProgress },
) => Promise<CreateMessageResult>;

/** Progress of a request relayed to the client, sent back to the MCP that asked. */
export type SamplingProgress = (p: { progress: number; total?: number; message?: string }) => void;

/** What the loop's tools are and how one runs: the gateway, with its whole pipeline. */
export interface SamplingTools {
  list(): Promise<readonly { id: string; description: string; inputSchema: Tool["inputSchema"] }[]>;
  run(toolId: string, args: Record<string, unknown>): Promise<CallToolResult>;
}

export interface SamplingDeps {
  readonly audit: AuditLog;
  /** The permission decision for an id (`sampling:<mcp>`). */
  readonly check: (id: string) => Decision;
  /** Adds an id to `permissions.allow` ("always"). */
  readonly allowAlways: (id: string) => Promise<void>;
  /** The user's environment, restricted to the BYOK names `.pml.json` `env` lists. */
  readonly byokEnv: Readonly<Record<string, string>>;
  readonly fetch?: typeof fetch;
  readonly bounds?: Partial<SamplingBounds>;
}

/** One sampling request as the gateway hands it over. */
export interface SamplingCall {
  /** The MCP that asked (its namespace). */
  readonly server: string;
  readonly params: CreateMessageRequestParams;
  readonly allowedToolPatterns: readonly string[];
  /** Asks the human, when the client can be asked; `undefined` when it cannot. */
  readonly ask?: (request: ApprovalRequest) => Promise<ApprovalDecision | undefined>;
  readonly clientSample?: ClientSample;
  /** The client's sampling takes tools (`sampling.tools`): the loop may run through it. */
  readonly clientTools?: boolean;
  readonly tools: SamplingTools;
  readonly signal?: AbortSignal;
  /** The MCP asked for progress of its request: the client's progress is sent back to it. */
  readonly onprogress?: SamplingProgress;
  /** Shared by the sampling requests of the tool call this one belongs to. */
  readonly budget?: SamplingBudget;
}

/** The `_meta` key of a result that says how PML answered. */
export const SAMPLING_META = "pml/sampling";

export class Sampling {
  readonly #d: SamplingDeps;
  readonly #bounds: SamplingBounds;

  constructor(deps: SamplingDeps) {
    this.#d = deps;
    this.#bounds = { ...DEFAULT_BOUNDS, ...deps.bounds };
  }

  /** Answers one request, or throws a `PmlError` that the MCP receives as the request's error. */
  async sample(call: SamplingCall): Promise<CreateMessageResult> {
    const id = `sampling:${call.server}`;
    const path = call.clientSample ? "client" : "byok";
    const endpoint = call.clientSample ? undefined : chooseEndpoint(call.params, this.#d.byokEnv);
    const size = promptSize(call.params);
    const audit = (result: string, extra: Record<string, unknown> = {}) =>
      this.#d.audit.write("sampling", {
        server: call.server,
        path,
        ...(endpoint ? { provider: endpoint.provider, model: endpoint.model } : {}),
        messages: call.params.messages.length,
        chars: size,
        result,
        ...extra,
      });

    const bounds = this.#bounds;
    if (size > bounds.maxPromptChars) {
      await audit("too_large");
      throw new PmlError(
        "SAMPLING_TOO_LARGE",
        `Sampling by "${call.server}": the prompt has ${size} characters, more than the ` +
          `${bounds.maxPromptChars} PML sends to a model; nothing was sent`,
      );
    }
    const budget = call.budget ?? { requests: 0 };
    if (budget.requests >= bounds.maxRequestsPerCall) {
      await audit("over_budget", { requests: budget.requests });
      throw overBudget(call.server, bounds.maxRequestsPerCall);
    }
    // The BYOK path asks the API for at most the loop's output bound in one turn.
    const asked = call.params.maxTokens;
    const maxTokens = call.clientSample ? asked : Math.min(asked, bounds.maxOutputTokens);

    const decision = this.#d.check(id);
    if (decision === "deny") {
      await audit("denied");
      throw new PmlError(
        "SAMPLING_DENIED",
        `Sampling by "${call.server}" is denied by .pml.json permissions ("${id}")`,
      );
    }
    if (!call.clientSample && !endpoint) {
      await audit("no_key");
      throw new PmlError(
        "SAMPLING_NO_LLM",
        `Sampling by "${call.server}": the MCP client did not declare sampling and no LLM API key ` +
          `is available. Set ${PROVIDERS.anthropic.key} (or ${PROVIDERS.openai.key}) in the ` +
          `environment of your MCP client and list its name in .pml.json "env" ` +
          `(e.g. "env": ["${PROVIDERS.anthropic.key}"]); ${PROVIDERS.anthropic.base} / ` +
          `${PROVIDERS.openai.base} point to a compatible server`,
      );
    }
    if (decision === "ask") {
      const hints = (call.params.modelPreferences?.hints ?? []).flatMap((h) => h.name ?? []);
      const via = call.clientSample
        ? `your MCP client's own model${hints.length ? ` (it asks for ${hints.join(", ")})` : ""}`
        : `${endpoint!.provider} model ${endpoint!.model} with your ${endpoint!.keyName}`;
      const answer = await call.ask?.({
        type: "sampling",
        description:
          `Allow "${call.server}" to ask ${via} for a completion? (${call.params.messages.length} ` +
          `message(s), ${size} characters, up to ${maxTokens} tokens${
            maxTokens < asked ? ` (it asked ${asked})` : ""
          })`,
        context: {
          server: call.server,
          path,
          model: endpoint?.model ?? hints[0],
          messages: call.params.messages.length,
          characters: size,
          maxTokens,
          tools: call.allowedToolPatterns,
        },
      });
      if (answer === undefined) {
        await audit("not_asked");
        throw new PmlError(
          "SAMPLING_NEEDS_APPROVAL",
          `Sampling by "${call.server}" needs the user's approval and this MCP client cannot be ` +
            `asked inside a call: add "${id}" to "permissions.allow" in .pml.json to allow it`,
        );
      }
      if (answer === "no") {
        await audit("refused");
        throw new PmlError("SAMPLING_DENIED", `The user refused sampling by "${call.server}"`);
      }
      if (answer === "always") await this.#d.allowAlways(id);
    }

    // The BYOK path's whole time: the loop checks it between turns, this ends a turn that hangs.
    // (A relayed request has its own timeout: a human may review it in the client.)
    const deadline = AbortSignal.timeout(this.#bounds.timeMs);
    const loopable = call.clientSample ? call.clientTools === true : true;
    const offered = !loopable || call.params.tools?.length || call.allowedToolPatterns.length === 0
      ? []
      : (await call.tools.list()).filter((t) =>
        call.allowedToolPatterns.some((p) => matchesPattern(p, t.id))
      );
    const counted = <T>(send: () => Promise<T>): Promise<T> => {
      // Every model request of this tool call counts, on either path, whatever loop sends it.
      if (budget.requests >= bounds.maxRequestsPerCall) {
        return Promise.reject(overBudget(call.server, bounds.maxRequestsPerCall));
      }
      budget.requests++;
      return send();
    };
    const model = call.clientSample
      ? (params: CreateMessageRequestParams, tools?: readonly Tool[]) =>
        counted(() =>
          call.clientSample!(tools?.length ? { ...params, tools: [...tools] } : params, {
            signal: call.signal,
            onprogress: call.onprogress,
          })
        )
      : (params: CreateMessageRequestParams, tools?: readonly Tool[]) =>
        counted(() =>
          callLlm(endpoint!, { params: { ...params, maxTokens }, tools: tools ?? params.tools }, {
            fetch: this.#d.fetch,
            signal: call.signal ? AbortSignal.any([call.signal, deadline]) : deadline,
          })
        ).catch((err) => {
          if (!deadline.aborted || call.signal?.aborted) throw err;
          throw new PmlError(
            "SAMPLING_TIME",
            `Sampling by "${call.server}" stopped at its time bound (${this.#bounds.timeMs} ms) ` +
              `while the ${endpoint!.provider} API had not answered`,
          );
        });
    try {
      const { result, turns, toolCalls, stopped } = await this.#loop(call, offered, model);
      await audit("answered", { turns, toolCalls, ...(stopped ? { stopped } : {}) });
      return result;
    } catch (err) {
      // The code only: an API's error text may echo the prompt (and a key in some form), and the
      // audit log never holds either. The MCP gets the message (redacted of the key).
      await audit("failed", {
        error: isPmlError(err) ? err.code : (err as Error)?.name ?? "error",
        ...(isPmlError(err) && typeof err.details?.status === "number"
          ? { status: err.details.status }
          : {}),
      });
      throw err;
    }
  }

  /** Runs model turns until an answer without tool use, or a bound. */
  async #loop(
    call: SamplingCall,
    offered: readonly { id: string; description: string; inputSchema: Tool["inputSchema"] }[],
    model: (params: CreateMessageRequestParams, tools?: readonly Tool[]) => Promise<
      CreateMessageResult & { usage?: { output: number } }
    >,
  ): Promise<{ result: CreateMessageResult; turns: number; toolCalls: number; stopped?: string }> {
    const bounds = this.#bounds;
    const byName = new Map(offered.map((t) => [exposedName(t.id), t.id]));
    const tools: Tool[] = offered.map((t) => ({
      name: exposedName(t.id),
      description: t.description,
      inputSchema: t.inputSchema,
    }));
    const messages: SamplingMessage[] = [...call.params.messages];
    const started = Date.now();
    let output = 0;
    let toolCalls = 0;
    for (let turn = 1;; turn++) {
      const answer = await model({ ...call.params, messages }, tools.length ? tools : undefined);
      output += answer.usage?.output ?? 0;
      const { usage: _usage, ...result } = answer;
      const uses = blocks(result).filter((b) => b.type === "tool_use");
      // The MCP's own tools (or none offered): the MCP runs its own loop with this answer.
      if (tools.length === 0 || uses.length === 0) {
        return { result: withMeta(result, turn, toolCalls, bounds), turns: turn, toolCalls };
      }
      const stopped = turn >= bounds.maxTurns
        ? "max_turns"
        : output >= bounds.maxOutputTokens
        ? "max_output_tokens"
        : Date.now() - started >= bounds.timeMs
        ? "time"
        : undefined;
      if (stopped) {
        const text = blocks(result).filter((b) => b.type === "text").map((b) => b.text).join("");
        return {
          result: withMeta(
            {
              role: "assistant",
              model: result.model,
              content: {
                type: "text",
                text: `${text}${
                  text ? "\n" : ""
                }[pml: sampling loop stopped at its bound (${stopped})]`,
              },
              stopReason: "maxTokens",
            },
            turn,
            toolCalls,
            bounds,
            stopped,
          ),
          turns: turn,
          toolCalls,
          stopped,
        };
      }
      messages.push({ role: "assistant", content: result.content } as SamplingMessage);
      const results = [];
      for (const use of uses) {
        toolCalls++;
        const toolId = byName.get(String(use.name));
        const outcome: CallToolResult = toolId
          ? await call.tools.run(toolId, (use.input ?? {}) as Record<string, unknown>)
            .catch((err) => ({
              content: [{ type: "text" as const, text: (err as Error).message }],
              isError: true,
            }))
          : {
            content: [{
              type: "text",
              text: `Tool "${
                String(use.name)
              }" is not offered to this sampling request (not in the MCP's allowedToolPatterns)`,
            }],
            isError: true,
          };
        results.push({
          type: "tool_result",
          toolUseId: use.id,
          content: outcome.content,
          ...(outcome.isError ? { isError: true } : {}),
        });
      }
      messages.push({ role: "user", content: results } as unknown as SamplingMessage);
    }
  }
}

type Block = Record<string, unknown>;

function blocks(result: CreateMessageResult): Block[] {
  const c = result.content as unknown;
  return (Array.isArray(c) ? c : [c]) as Block[];
}

function withMeta(
  result: CreateMessageResult,
  turns: number,
  toolCalls: number,
  bounds: SamplingBounds,
  stopped?: string,
): CreateMessageResult {
  return {
    ...result,
    _meta: {
      ...result._meta,
      [SAMPLING_META]: { turns, toolCalls, bounds, ...(stopped ? { stopped } : {}) },
    },
  };
}
