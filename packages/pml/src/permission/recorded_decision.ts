/**
 * A retried call taking a human's stored decision: when the agent calls the same tool again
 * instead of continuing, a decision a human gave (the page, `pml approve`, `pml deny`) on the
 * stored approval of exactly that call is applied, once.
 *
 * @module
 */
import { canonicalJson } from "../canonical_json.ts";
import type { ApprovalRequest } from "./approvals.ts";
import type { ApprovalStore, StoredApproval, StoredDecision } from "./approval_store.ts";

/** The call an approval was asked for (see `StoredApproval.replay`). */
type Call = NonNullable<StoredApproval["replay"]>;

/**
 * A human's decision on a stored approval of exactly this call, claimed for its one use: the same
 * tool and arguments (`call`, compared canonically) and the same question now (type, words,
 * context, the part only a human sees, what "always" adds). Only a human writes a decision into
 * the store; the agent's `pml:continue` records none. Returns the approval's id (no longer
 * pending) with the decision, or `undefined` when there is none to take.
 */
export async function claimRecordedDecision(
  store: ApprovalStore,
  request: ApprovalRequest,
  call: Call,
): Promise<{ id: string; decided: StoredDecision } | undefined> {
  let asked: string | undefined;
  for (const stored of await store.list()) {
    if (!stored.decided || !stored.replay) continue;
    asked ??= questionKey(request, call);
    if (questionKey(stored, stored.replay) !== asked) continue;
    if (!(await store.claim(stored.id))) continue;
    return { id: stored.id, decided: stored.decided };
  }
  return undefined;
}

/** What makes two questions about one call the same, as one string. */
function questionKey(request: ApprovalRequest, call: Call): string {
  const { type, description, context, forHuman, allows } = request;
  return canonicalJson({ call, type, description, context, forHuman, allows });
}
