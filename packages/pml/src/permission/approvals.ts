/**
 * The human in the loop (DESIGN §5, §12; docs/approvals.md): what an approval asks
 * ({@link ApprovalRequest}), who decided it and how, and {@link Approvals}, which asks by
 * elicitation inside the call where it can and otherwise returns `approval_required` and waits for
 * `pml:continue`. Asking by elicitation, and how it ends without a decision, is `elicitation.ts`;
 * a retried call taking a human's stored decision, `recorded_decision.ts`; the store,
 * `approval_store.ts`.
 *
 * @module
 */
import type { CallToolResult } from "../sdk/types.ts";
import { isPmlError, PmlError } from "../errors.ts";
import type {
  ApprovalMode,
  ApprovalOwner,
  ApprovalStore,
  StoredApproval,
} from "./approval_store.ts";
import { claimRecordedDecision } from "./recorded_decision.ts";
import { howHumanAnswers, type HumanChannel } from "./human_channel.ts";
import { type Elicit, ElicitationDeclinedByClient, ElicitationUnanswered } from "./elicitation.ts";

/** What an approval is about (DESIGN §5). */
export type ApprovalType =
  | "tool_permission"
  | "dependency"
  | "integrity"
  | "api_key_required"
  | "sampling";
/** The human's answer. */
export type ApprovalDecision = "yes" | "always" | "no";

/** A question for the human. `description` and `context` are what the agent may see too. */
export interface ApprovalRequest {
  readonly type: ApprovalType;
  readonly description: string;
  readonly context: Record<string, unknown>;
  /**
   * What only the human's channels show (the approval page, `pml approvals`): for an `integrity`
   * approval, the new description and schema text, which may carry instructions meant for the
   * agent. Never put into a result, an elicitation or `tools/list`.
   */
  readonly forHuman?: HumanDetail;
  /**
   * The exact id that "always" adds to `permissions.allow` (the tool of a `tool_permission` the
   * gateway asks), when it adds one: what a human's "always" applies at once, on the page or with
   * `pml approve --always`.
   */
  readonly allows?: string;
}

/** The part of an approval only a human's channel shows (see {@link ApprovalRequest.forHuman}). */
export interface HumanDetail {
  readonly description: string;
  readonly context?: Record<string, unknown>;
}

/**
 * Who gave a decision: the human (elicitation, the page, `pml approve`), the agent
 * (`pml:continue`), or the client on its own (a `decline` faster than `HUMAN_MIN_MS`).
 */
export type DecidedBy = "user" | "agent" | "client";

/** How a decision was given, for the audit log and the result's wording. */
export interface DecisionDetail {
  readonly via: "elicitation" | "page" | "cli" | "pml:continue";
  /** How long the client took to decline (`by: "client"`). */
  readonly ms?: number;
}

/** Who refused, in words for a result: "the user refused", "the client declined … (12 ms)". */
export function refusedBy(by: DecidedBy, detail?: DecisionDetail): string {
  if (by === "user") return "the user refused";
  if (by === "agent") return "pml:continue refused";
  return `the client declined the question in ${detail?.ms ?? 0} ms, faster than a person can ` +
    `answer: nobody was asked (PML takes it as a no; approve it in the client's own prompt or ` +
    `allow the tool in .pml.json)`;
}

/** The channel an approval is asked through. */
export interface AskVia {
  readonly elicit?: Elicit;
  /** The tool call to run again if `pml` restarts before the answer (plain tool approvals). */
  readonly replay?: StoredApproval["replay"];
}

/** The result shape an agent answers with `pml:continue` (DESIGN §5). */
export interface ApprovalRequired {
  status: "approval_required";
  approval_type: ApprovalType;
  workflow_id: string;
  description: string;
  context: Record<string, unknown>;
  options: ApprovalDecision[];
  /** `human`: only a human decides, on the page or with `pml approve` ({@link howHumanAnswers}). */
  approval_mode?: ApprovalMode;
  message?: string;
}

/** What `pml:continue` answers while a human approval is undecided. No link: the id and how. */
export interface WaitingForHuman {
  status: "waiting_for_human";
  workflow_id: string;
  message: string;
}

/** Turns the decision into the call's result (runs the approved call, or explains the refusal). */
export type Resume = (
  decision: ApprovalDecision,
  by: DecidedBy,
  detail?: DecisionDetail,
) => Promise<CallToolResult>;

/** A decision as the audit log records it. */
export interface Decided {
  readonly request: ApprovalRequest;
  readonly workflowId?: string;
  readonly decision: ApprovalDecision;
  readonly by: DecidedBy;
  readonly detail: DecisionDetail;
}

interface Pending {
  readonly request: ApprovalRequest;
  readonly resume: Resume;
  readonly expiresAt: number;
  readonly mode: ApprovalMode;
}

/** Rebuilds the continuation of a stored approval after a restart (`undefined`: cannot). */
export type Revive = (approval: StoredApproval) => Promise<Resume | undefined>;

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
  readonly #store?: ApprovalStore;
  readonly #mode: (request: ApprovalRequest) => ApprovalMode;
  readonly #human?: HumanChannel;
  readonly #onDecided?: (decided: Decided) => Promise<void> | void;
  #revive?: Revive;
  readonly #owner?: ApprovalOwner;

  constructor(
    opts: {
      ttlMs?: number;
      now?: () => number;
      /** Told when an elicitation ended without a decision (for the audit log). */
      onUnanswered?: (
        request: ApprovalRequest,
        error: ElicitationUnanswered,
      ) => Promise<void> | void;
      /** Where pending approvals are kept (`.pml/approvals/`), for the page, the CLI, restarts. */
      store?: ApprovalStore;
      /** Who may decide `request` (default: the agent). */
      mode?: (request: ApprovalRequest) => ApprovalMode;
      /** Tells the human that an approval waits for them (stderr, notification, with a link). */
      human?: HumanChannel;
      /**
       * Told of every decision the agent or the client gives, or a human gives by elicitation
       * (for the audit log). A human's decision on the page or with `pml approve` is audited when
       * it is given (`human_decision.ts`), not again when `pml:continue` takes it up.
       */
      onDecided?: (decided: Decided) => Promise<void> | void;
      /** The `pml` process that asks (stored, so that `pml approve` knows when it has ended). */
      owner?: ApprovalOwner;
    } = {},
  ) {
    this.#ttlMs = opts.ttlMs ?? DEFAULT_APPROVAL_TTL_MS;
    this.#now = opts.now ?? Date.now;
    this.#onUnanswered = opts.onUnanswered;
    this.#store = opts.store;
    this.#mode = opts.mode ?? (() => "agent");
    this.#human = opts.human;
    this.#onDecided = opts.onDecided;
    this.#owner = opts.owner;
  }

  /** How a stored approval's call is rebuilt after a restart (set by the gateway). */
  set revive(revive: Revive) {
    this.#revive = revive;
  }

  /**
   * Asks `request`; `resume` produces the result once someone has decided. With `via.elicit` the
   * human is asked inside the call (unless the request has a `forHuman` part); when that ends without a decision (or there is no elicitation),
   * the call returns `approval_required` and waits for `pml:continue`.
   */
  async ask(request: ApprovalRequest, resume: Resume, via: AskVia = {}): Promise<CallToolResult> {
    // The agent called again instead of continuing: the identical call takes a human's decision.
    const recorded = via.replay && this.#store &&
      await claimRecordedDecision(this.#store, request, via.replay);
    if (recorded) {
      this.#pending.delete(recorded.id);
      return await resume(recorded.decided.decision, "user", { via: recorded.decided.via });
    }
    // A question with a part only the human may read (a changed definition's new text) is not
    // elicited: a client may show an elicitation to its agent, and the human needs the difference,
    // which only the page and `pml approvals` show.
    if (via.elicit && !request.forHuman) {
      let decision: ApprovalDecision | undefined;
      try {
        decision = await via.elicit(request);
      } catch (err) {
        if (err instanceof ElicitationDeclinedByClient) {
          return await this.#decided(request, undefined, resume, "no", "client", {
            via: "elicitation",
            ms: err.ms,
          });
        }
        if (!(err instanceof ElicitationUnanswered)) throw err;
        await this.#onUnanswered?.(request, err);
      }
      if (decision) {
        return await this.#decided(request, undefined, resume, decision, "user", {
          via: "elicitation",
        });
      }
    }
    this.#sweep();
    const workflowId = crypto.randomUUID();
    const mode = this.#store ? this.#mode(request) : "agent";
    const now = this.#now();
    const expiresAt = now + this.#ttlMs;
    try {
      await this.#store?.put({
        id: workflowId,
        ...request,
        mode,
        createdAt: now,
        expiresAt,
        replay: via.replay,
        owner: this.#owner,
      });
    } catch (err) {
      if (!isPmlError(err, "APPROVAL_TOO_LARGE")) throw err;
      return { content: [{ type: "text", text: err.message }], isError: true };
    }
    this.#pending.set(workflowId, { request, resume, expiresAt, mode });
    const body: ApprovalRequired = {
      status: "approval_required",
      approval_type: request.type,
      workflow_id: workflowId,
      description: request.description,
      context: request.context,
      options: ["yes", "always", "no"],
    };
    if (mode === "human") {
      body.approval_mode = "human";
      body.message = howHumanAnswers(workflowId);
      await this.#human?.approvalWaiting({
        workflowId,
        description: request.description,
        reminder: false,
      });
    }
    return {
      content: [{ type: "text", text: JSON.stringify(body) }],
      structuredContent: body as unknown as Record<string, unknown>,
    };
  }

  /**
   * Answers a pending approval (the `pml:continue` tool), from whichever MCP session or `pml`
   * process of this workspace presents its workflow id, over stdio and HTTP alike: the id is the
   * capability (random, handed only to the agent that was asked), the continuation is this
   * gateway's (in memory, or rebuilt from the workspace's store), and each id is answered once. A
   * human's decision, when one was given (page, `pml approve`), is the one applied, in either
   * mode; in human mode nothing else is.
   */
  async continue(workflowId: string, decision: ApprovalDecision): Promise<CallToolResult> {
    this.#sweep();
    const pending = this.#pending.get(workflowId) ?? await this.#revived(workflowId);
    const notFound = () => {
      this.#pending.delete(workflowId);
      return new PmlError(
        "APPROVAL_NOT_FOUND",
        `No pending approval "${workflowId}" (it was answered already, or expired after ${
          Math.round(this.#ttlMs / 60000)
        } min); call the tool again`,
      );
    };
    // Gone from the store: taken by a retry of its call, or by another pml of the workspace.
    if (!pending || (this.#store && !(await this.#store.get(workflowId)))) throw notFound();
    const human = await this.#store?.decision(workflowId);
    if (!human && pending.mode === "human") {
      return await this.#waiting(workflowId, pending.request);
    }
    this.#pending.delete(workflowId);
    // Each id is used once, whoever else presents it at the same moment.
    if (this.#store && !(await this.#store.claim(workflowId))) throw notFound();
    // A human's decision was audited (and its "always" applied) when they gave it.
    if (human) return await pending.resume(human.decision, "user", { via: human.via });
    return await this.#decided(pending.request, workflowId, pending.resume, decision, "agent", {
      via: "pml:continue",
    });
  }

  async #decided(
    request: ApprovalRequest,
    workflowId: string | undefined,
    resume: Resume,
    decision: ApprovalDecision,
    by: DecidedBy,
    detail: DecisionDetail,
  ): Promise<CallToolResult> {
    await this.#onDecided?.({ request, workflowId, decision, by, detail });
    return await resume(decision, by, detail);
  }

  /** The stored approval `id` with a rebuilt continuation (after a restart), if possible. */
  async #revived(id: string): Promise<Pending | undefined> {
    const stored = await this.#store?.get(id);
    const resume = stored && await this.#revive?.(stored);
    if (!stored || !resume) return undefined;
    const pending: Pending = {
      request: stored,
      resume,
      expiresAt: stored.expiresAt,
      mode: stored.mode,
    };
    this.#pending.set(id, pending);
    return pending;
  }

  async #waiting(id: string, request: ApprovalRequest): Promise<CallToolResult> {
    const body: WaitingForHuman = {
      status: "waiting_for_human",
      workflow_id: id,
      message: `Not run yet: waiting for a human to decide. ${howHumanAnswers(id)}`,
    };
    await this.#human?.approvalWaiting({
      workflowId: id,
      description: request.description,
      reminder: true,
    });
    return {
      content: [{ type: "text", text: body.message }],
      structuredContent: body as unknown as Record<string, unknown>,
    };
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
