import type { CallToolResult } from "../sdk/types.ts";
import { PmlError } from "../errors.ts";

/** What an approval is about (DESIGN §5). */
export type ApprovalType =
  | "tool_permission"
  | "dependency"
  | "integrity"
  | "api_key_required"
  | "sampling";
/** The human's answer. */
export type ApprovalDecision = "yes" | "always" | "no";

/** A question for the human. */
export interface ApprovalRequest {
  readonly type: ApprovalType;
  readonly description: string;
  readonly context: Record<string, unknown>;
}

/**
 * Asks through MCP elicitation; resolves to the human's decision (`decline` → `no`). When nobody
 * decided (the client answered `cancel`, the request failed, or no answer came in time) it throws
 * {@link ElicitationUnanswered}, and the approval falls back to `approval_required` (DESIGN §12).
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

/** Who gave a decision: the human through elicitation, or the agent through `pml:continue`. */
export type DecidedBy = "user" | "agent";

/** The channel an approval is asked through. */
export interface AskVia {
  readonly elicit?: Elicit;
  /** The MCP session that was asked (`pml serve`); only it may answer with `pml:continue`. */
  readonly session?: string;
}

/** The result shape an agent answers with `pml:continue` (DESIGN §5). */
export interface ApprovalRequired {
  status: "approval_required";
  approval_type: ApprovalType;
  workflow_id: string;
  description: string;
  context: Record<string, unknown>;
  options: ApprovalDecision[];
}

/** Turns the decision into the call's result (runs the approved call, or explains the refusal). */
export type Resume = (decision: ApprovalDecision, by: DecidedBy) => Promise<CallToolResult>;

interface Pending {
  readonly request: ApprovalRequest;
  readonly resume: Resume;
  readonly expiresAt: number;
  readonly session?: string;
}

export const DEFAULT_APPROVAL_TTL_MS = 10 * 60 * 1000;

/**
 * The human in the loop. With an `elicit` channel the question is asked inside the call and the call
 * continues; without one the call returns an `approval_required` result and waits in memory (until
 * it expires) for `pml:continue`.
 */
export class Approvals {
  #pending = new Map<string, Pending>();
  readonly #ttlMs: number;
  readonly #now: () => number;

  readonly #onUnanswered?: (
    request: ApprovalRequest,
    error: ElicitationUnanswered,
  ) => Promise<void> | void;

  constructor(
    opts: {
      ttlMs?: number;
      now?: () => number;
      /** Told when an elicitation ended without a decision (for the audit log). */
      onUnanswered?: (
        request: ApprovalRequest,
        error: ElicitationUnanswered,
      ) => Promise<void> | void;
    } = {},
  ) {
    this.#ttlMs = opts.ttlMs ?? DEFAULT_APPROVAL_TTL_MS;
    this.#now = opts.now ?? Date.now;
    this.#onUnanswered = opts.onUnanswered;
  }

  /**
   * Asks `request`; `resume` produces the result once someone has decided. With `via.elicit` the
   * human is asked inside the call; when that ends without a decision (or there is no elicitation),
   * the call returns `approval_required` and waits for `pml:continue` from `via.session`.
   */
  async ask(request: ApprovalRequest, resume: Resume, via: AskVia = {}): Promise<CallToolResult> {
    if (via.elicit) {
      let decision: ApprovalDecision | undefined;
      try {
        decision = await via.elicit(request);
      } catch (err) {
        if (!(err instanceof ElicitationUnanswered)) throw err;
        await this.#onUnanswered?.(request, err);
      }
      if (decision) return await resume(decision, "user");
    }
    this.#sweep();
    const workflowId = crypto.randomUUID();
    this.#pending.set(workflowId, {
      request,
      resume,
      expiresAt: this.#now() + this.#ttlMs,
      session: via.session,
    });
    const body: ApprovalRequired = {
      status: "approval_required",
      approval_type: request.type,
      workflow_id: workflowId,
      description: request.description,
      context: request.context,
      options: ["yes", "always", "no"],
    };
    return {
      content: [{ type: "text", text: JSON.stringify(body) }],
      structuredContent: body as unknown as Record<string, unknown>,
    };
  }

  /**
   * Answers a pending approval (the `pml:continue` tool). Each workflow id is answered once, and
   * only from the session that was asked.
   */
  async continue(
    workflowId: string,
    decision: ApprovalDecision,
    session?: string,
  ): Promise<CallToolResult> {
    this.#sweep();
    const pending = this.#pending.get(workflowId);
    if (pending && pending.session !== session) {
      throw new PmlError(
        "APPROVAL_OTHER_SESSION",
        `The approval "${workflowId}" was asked in another MCP session; only that session can answer it`,
      );
    }
    if (!pending) {
      throw new PmlError(
        "APPROVAL_NOT_FOUND",
        `No pending approval "${workflowId}" (it was answered already, or expired after ${
          Math.round(this.#ttlMs / 60000)
        } min); call the tool again`,
      );
    }
    this.#pending.delete(workflowId);
    return await pending.resume(decision, "agent");
  }

  /** Number of approvals waiting (for tests and status). */
  get size(): number {
    this.#sweep();
    return this.#pending.size;
  }

  #sweep(): void {
    const now = this.#now();
    for (const [id, p] of this.#pending) if (p.expiresAt <= now) this.#pending.delete(id);
  }
}

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
