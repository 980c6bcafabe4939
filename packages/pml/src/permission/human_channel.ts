/**
 * The two audiences of an approval (DESIGN §13 "Channels"). What the agent receives (results,
 * errors, `tools/list`) and what only the human receives (a link that decides approvals) are
 * different types: an {@link ApprovalLink} never serialises to its URL, and the agent-facing
 * messages are built from the approval id alone.
 */

/**
 * A one-time link to the approval page. Its token decides approvals, so it goes only to human
 * channels (`pml`'s stderr, `pml approvals --open`, a desktop notification): `JSON.stringify`,
 * string templates and `String()` see a placeholder, and only {@link ApprovalLink.forHuman} gives
 * the URL, at the point where it is written for a person.
 */
export class ApprovalLink {
  readonly #url: string;

  constructor(url: string) {
    this.#url = url;
  }

  /** The URL with its token, to be written to a human channel (never into a result). */
  forHuman(): string {
    return this.#url;
  }

  toJSON(): string {
    return "[approval link: shown to the human only]";
  }

  toString(): string {
    return this.toJSON();
  }
}

/** What the human is told when an approval waits for them. */
export interface HumanNotice {
  readonly workflowId: string;
  readonly description: string;
  /** The agent asked again (`pml:continue` before the decision): a reminder, not a new question. */
  readonly reminder: boolean;
}

/**
 * How {@link Approvals} reaches the human (a port the composition root hands down): the channel
 * mints its own link, so the approval code never holds one.
 */
export interface HumanChannel {
  approvalWaiting(notice: HumanNotice): Promise<void>;
}

/**
 * What the agent is told about answering a human approval: the id and the commands a human runs,
 * never a link. The only text of `approval_required` and `waiting_for_human` about the human.
 */
export function howHumanAnswers(workflowId: string): string {
  return `Approval ${workflowId} waits for a human: in a terminal of this workspace, ` +
    `\`pml approve ${workflowId}\` (or \`pml deny ${workflowId}\`), or \`pml approvals --open\` ` +
    `for the approval page. Then call pml__continue with workflow_id "${workflowId}" to get the ` +
    `result. The agent cannot approve it.`;
}
