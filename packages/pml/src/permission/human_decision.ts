/**
 * A human's decision on a pending approval, taken when they give it (the approval page, `pml
 * approve`, `pml deny`): written to the workspace's store, audited, and its "always" applied to
 * `.pml.json` at once, whether or not an agent ever continues (docs/approvals.md). The agent's
 * `pml:continue` later takes it up and runs (or refuses) the call.
 *
 * @module
 */
import { type AuditLog, createAuditLog } from "../audit/audit.ts";
import type { Config } from "../config/config.ts";
import { PmlError } from "../errors.ts";
import { procStat } from "../procfs.ts";
import type { ApprovalDecision, Decided } from "./approvals.ts";
import { type ApprovalOwner, ApprovalStore, type StoredApproval } from "./approval_store.ts";
import { humanPermissionStore } from "./permission_store.ts";

/** What a human decision needs: the store, the audit log, and the writer of `permissions.allow`. */
export interface HumanDecisionDeps {
  readonly store: ApprovalStore;
  readonly audit: AuditLog;
  /** Adds an exact id to `permissions.allow` in `.pml.json` (the "always" answer). */
  readonly allowAlways: (id: string) => Promise<void>;
  /** Whether the `pml` that asked still runs (default: {@link ownerRuns}). */
  readonly runs?: (owner: ApprovalOwner) => boolean;
}

/** The deps of a human decision in the workspace of `config`, outside a gateway (the CLI). */
export function humanDecisionDeps(config: Config): HumanDecisionDeps {
  const permissions = humanPermissionStore(config);
  return {
    store: new ApprovalStore(config.workspace, config.pmlHome),
    audit: createAuditLog(config.workspace),
    allowAlways: (id) => permissions.allowAlways(id),
  };
}

/** A recorded decision: the approval it answered, and the id "always" added to `allow`, if any. */
export interface HumanDecided {
  readonly approval: StoredApproval;
  readonly allowed?: string;
}

/**
 * Records `decision` on the pending approval `id`. Refused (`APPROVAL_NOT_FOUND`,
 * `APPROVAL_DECIDED`) when it is unknown, expired or decided already; refused too
 * (`APPROVAL_ORPHANED`, and the approval is removed) when it cannot be applied any more: it was
 * asked inside a call (an install, a paused `pml:execute`) of a `pml` that has ended, and no later
 * `pml:continue` could run it.
 *
 * @example
 * ```ts
 * const { allowed } = await decideAsHuman(deps, id, "always", "cli");
 * ```
 */
export async function decideAsHuman(
  deps: HumanDecisionDeps,
  id: string,
  decision: ApprovalDecision,
  via: "page" | "cli",
): Promise<HumanDecided> {
  const approval = await deps.store.get(id);
  if (!approval) {
    throw new PmlError(
      "APPROVAL_NOT_FOUND",
      `No pending approval "${id}" in this workspace (answered already, or expired)`,
    );
  }
  const owner = approval.owner;
  if (!approval.replay && owner && !(deps.runs ?? ownerRuns)(owner)) {
    await deps.store.remove(id);
    throw new PmlError(
      "APPROVAL_ORPHANED",
      `Cannot apply a decision to "${id}" (${approval.description}): it was asked inside a ` +
        `call of the pml process ${owner.pid}, which has ended, and only that call could go on. ` +
        `Nothing was recorded and the approval is removed; the agent calls the tool again.`,
    );
  }
  await deps.store.decide(id, decision, via);
  await auditDecided(deps.audit, {
    request: approval,
    workflowId: id,
    decision,
    by: "user",
    detail: { via },
  });
  if (decision !== "always" || !approval.allows) return { approval };
  await deps.allowAlways(approval.allows);
  return { approval, allowed: approval.allows };
}

/** The `approval_decided` audit line of a decision, whoever gave it. */
export async function auditDecided(audit: AuditLog, decided: Decided): Promise<void> {
  const { request, workflowId, decision, by, detail } = decided;
  await audit.write("approval_decided", {
    tool: request.context.tool,
    approval_type: request.type,
    ...(workflowId ? { workflow_id: workflowId } : {}),
    decision,
    by,
    via: detail.via,
    ...(detail.ms !== undefined ? { declined_in_ms: detail.ms } : {}),
  });
}

/** This process, as an approval's owner. */
export function thisOwner(): ApprovalOwner {
  return { pid: Deno.pid, start: procStat(Deno.pid)?.start };
}

/**
 * Whether `owner` still runs: its pid is alive and started when it did. Where `/proc` tells
 * nothing (macOS), or the stored owner is no pid, it is taken to run: a decision is kept rather
 * than refused on a guess.
 */
export function ownerRuns(owner: ApprovalOwner): boolean {
  if (owner.start === undefined || !Number.isInteger(owner.pid) || owner.pid <= 0) return true;
  const stat = procStat(owner.pid);
  return stat !== undefined && stat.state !== "Z" && stat.start === owner.start;
}
