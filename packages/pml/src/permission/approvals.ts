import type { CallToolResult } from "../sdk/types.ts";
import { PmlError } from "../errors.ts";

/** What an approval is about (DESIGN §5). */
export type ApprovalType = "tool_permission" | "dependency" | "integrity" | "api_key_required";
/** The human's answer. */
export type ApprovalDecision = "yes" | "always" | "no";

/** A question for the human. */
export interface ApprovalRequest {
  readonly type: ApprovalType;
  readonly description: string;
  readonly context: Record<string, unknown>;
}

/** Asks through MCP elicitation; resolves to the decision (declined or cancelled → `no`). */
export type Elicit = (request: ApprovalRequest) => Promise<ApprovalDecision>;

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
export type Resume = (decision: ApprovalDecision) => Promise<CallToolResult>;

interface Pending {
  readonly request: ApprovalRequest;
  readonly resume: Resume;
  readonly expiresAt: number;
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

  constructor(opts: { ttlMs?: number; now?: () => number } = {}) {
    this.#ttlMs = opts.ttlMs ?? DEFAULT_APPROVAL_TTL_MS;
    this.#now = opts.now ?? Date.now;
  }

  /** Asks `request`; `resume` produces the result once the human has decided. */
  async ask(request: ApprovalRequest, resume: Resume, elicit?: Elicit): Promise<CallToolResult> {
    if (elicit) return await resume(await elicit(request));
    this.#sweep();
    const workflowId = crypto.randomUUID();
    this.#pending.set(workflowId, { request, resume, expiresAt: this.#now() + this.#ttlMs });
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

  /** Answers a pending approval (the `pml:continue` tool). Each workflow id is answered once. */
  async continue(workflowId: string, decision: ApprovalDecision): Promise<CallToolResult> {
    this.#sweep();
    const pending = this.#pending.get(workflowId);
    if (!pending) {
      throw new PmlError(
        "APPROVAL_NOT_FOUND",
        `No pending approval "${workflowId}" (it was answered already, or expired after ${
          Math.round(this.#ttlMs / 60000)
        } min); call the tool again`,
      );
    }
    this.#pending.delete(workflowId);
    return await pending.resume(decision);
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
