/**
 * Asking an approval by MCP elicitation: the channel ({@link Elicit}), the form it shows
 * ({@link DECISION_SCHEMA}), and the two ways it ends without a person's decision: nobody decided
 * ({@link ElicitationUnanswered}, the approval falls back to `approval_required`) or the client
 * declined faster than a person can answer ({@link ElicitationDeclinedByClient}, a no nobody gave).
 *
 * @module
 */
import type { ApprovalDecision, ApprovalRequest } from "./approvals.ts";

/**
 * Asks through MCP elicitation; resolves to the human's decision (`decline` → `no`). A `decline`
 * faster than a person can answer throws {@link ElicitationDeclinedByClient} (a no, given by the
 * client). When nobody decided (the client answered `cancel`, the request failed, or no answer came
 * in time) it throws {@link ElicitationUnanswered}, and the approval falls back to
 * `approval_required` (DESIGN §12).
 */
export type Elicit = (request: ApprovalRequest) => Promise<ApprovalDecision>;

/** How an elicitation ended without a decision. */
export type Unanswered = "cancel" | "error" | "timeout";

/** Thrown by an {@link Elicit} when the human did not decide: not a refusal. */
export class ElicitationUnanswered extends Error {
  constructor(readonly how: Unanswered, detail?: string) {
    super(`The elicitation ended without a decision (${how}${detail ? `: ${detail}` : ""})`);
    this.name = "ElicitationUnanswered";
  }
}

/**
 * Thrown by an {@link Elicit} when the client declined faster than a person can read the question
 * ({@link HUMAN_MIN_MS}): a "no", but nobody was asked, and the result and audit say so.
 */
export class ElicitationDeclinedByClient extends Error {
  constructor(readonly ms: number) {
    super(`The client declined the question in ${ms} ms, before a person could have answered`);
    this.name = "ElicitationDeclinedByClient";
  }
}

/**
 * A `decline` that comes back sooner than this was not a person's answer: reading the question
 * and choosing takes longer. Codex's bypass flag, for instance, declines every elicitation at once.
 */
export const HUMAN_MIN_MS = 1500;

/** The JSON schema of the elicitation form: one required choice. */
export const DECISION_SCHEMA = {
  type: "object",
  properties: {
    decision: {
      type: "string",
      title: "Decision",
      enum: ["yes", "always", "no"],
      enumNames: ["Yes, this time", "Always (add to allow)", "No"],
    },
  },
  required: ["decision"],
} as const;
