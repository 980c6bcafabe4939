import type { Config } from "../config/config.ts";
import { PmlError } from "../errors.ts";
import type { ApprovalDecision } from "../permission/approvals.ts";
import { ApprovalStore } from "../permission/approval_store.ts";
import { decideAsHuman, humanDecisionDeps, ownerRuns } from "../permission/human_decision.ts";
import { SHOWN_DEPTH, shownJson } from "../permission/shown_json.ts";
import type { CliIo } from "./io.ts";
import { printable, printableLine as q, printableOutput } from "../sandbox/printable.ts";

/** `pml approvals [--json]`: the pending approvals of the workspace. */
export async function runApprovals(config: Config, io: CliIo, json: boolean): Promise<number> {
  const list = await new ApprovalStore(config.workspace, config.pmlHome).list();
  if (json) {
    // Indented for people, compact below a few levels (deeply nested arguments stay small).
    io.stdout(printableOutput(shownJson(list, SHOWN_DEPTH + 3)) + "\n");
    return 0;
  }
  if (list.length === 0) {
    io.stdout(`No pending approval in ${config.workspace}\n`);
    return 0;
  }
  for (const a of list) {
    const args = JSON.stringify(a.context.arguments ?? {});
    const state = a.decided
      ? `decided: ${q(a.decided.decision)}`
      : !a.replay && a.owner && !ownerRuns(a.owner)
      ? `cannot be continued: the pml that asked (pid ${a.owner.pid}) has ended; the agent ` +
        `calls the tool again`
      : `waiting (${q(a.mode)})`;
    // The tool, its arguments and the file contents quoted for the human are the agent's: shown
    // with their controls escaped, and none of them starts a line of its own.
    io.stdout(
      `${q(a.id)}  ${q(String(a.context.tool ?? a.type))}  ${state}\n  ${q(a.description)}\n${
        a.forHuman ? `  ${printable(a.forHuman.description).replaceAll("\n", "\n  ")}\n` : ""
      }  arguments: ${q(args.length > 300 ? args.slice(0, 300) + "…" : args)}\n`,
    );
  }
  return 0;
}

/**
 * `pml approve ID|--all [--always]` and `pml deny ID|--all`: a human's decision, recorded, audited
 * and its "always" applied at once (`decideAsHuman`, as on the page); the agent's next
 * `pml:continue` gets the result. Says what it applied, and refuses a decision it cannot apply.
 */
export async function runDecide(
  config: Config,
  io: CliIo,
  opts: { ids: string[]; all: boolean; decision: ApprovalDecision },
): Promise<number> {
  const deps = humanDecisionDeps(config);
  let ids = opts.ids;
  if (opts.all) {
    if (ids.length > 0) throw new TypeError("give approval ids or --all, not both");
    ids = (await deps.store.list()).filter((a) => !a.decided).map((a) => a.id);
    if (ids.length === 0) {
      io.stdout(`No pending approval in ${config.workspace}\n`);
      return 0;
    }
  }
  if (ids.length === 0) throw new TypeError("give an approval id (see `pml approvals`) or --all");
  let failed = 0;
  for (const id of ids) {
    try {
      const { approval, allowed } = await decideAsHuman(deps, id, opts.decision, "cli");
      const what = q(String(approval.context.tool ?? approval.type));
      const always = opts.decision !== "always"
        ? ""
        : allowed
        ? `; "${q(allowed)}" added to permissions.allow in .pml.json`
        : `; "always" adds nothing to permissions.allow for this approval (${approval.type}): ` +
          `it counts as yes`;
      io.stdout(
        `${q(id)}: ${opts.decision} (${what})${always}; the agent's pml:continue with this id ` +
          `gets the result\n`,
      );
    } catch (err) {
      if (!(err instanceof PmlError)) throw err;
      io.stderr(`pml: ${err.message}\n`);
      failed++;
    }
  }
  return failed === 0 ? 0 : 1;
}
