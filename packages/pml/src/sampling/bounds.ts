/**
 * What sampling may ask of a model (docs/sampling.md, "Bounds"): per request (turns, output
 * tokens, time), per tool call (model requests of all its sampling requests) and per prompt.
 *
 * @module
 */
import { PmlError } from "../errors.ts";
import type { CreateMessageRequestParams } from "../sdk/types.ts";

/** Bounds of one sampling request's loop, and of what one tool call may ask in all. */
export interface SamplingBounds {
  readonly maxTurns: number;
  /** Output tokens of one request's loop; also the most `maxTokens` one turn asks the BYOK API. */
  readonly maxOutputTokens: number;
  readonly timeMs: number;
  /** Model requests (turns of every sampling request) one tool call may cause, on either path. */
  readonly maxRequestsPerCall: number;
  /** Characters of one request's prompt (system prompt and text blocks). */
  readonly maxPromptChars: number;
}

export const DEFAULT_BOUNDS: SamplingBounds = {
  maxTurns: 8,
  maxOutputTokens: 16_000,
  timeMs: 120_000,
  maxRequestsPerCall: 32,
  maxPromptChars: 1_000_000,
};

/** What the sampling requests of one tool call have used (shared by all of them). */
export interface SamplingBudget {
  requests: number;
}

export function overBudget(server: string, max: number): PmlError {
  return new PmlError(
    "SAMPLING_BUDGET",
    `Sampling by "${server}" refused: this tool call has made ${max} model requests, the most ` +
      `one tool call may make; nothing more is sent until the next call`,
  );
}

type Block = Record<string, unknown>;

/** Characters of text in the request (system prompt included): what the question shows. */
export function promptSize(params: CreateMessageRequestParams): number {
  let n = params.systemPrompt?.length ?? 0;
  for (const m of params.messages) {
    const c = m.content as unknown;
    for (const b of (Array.isArray(c) ? c : [c]) as Block[]) {
      if (typeof b.text === "string") n += b.text.length;
    }
  }
  return n;
}
