import type { Config } from "../config/config.ts";
import { PmlError } from "../errors.ts";
import type { ApprovalDecision } from "../permission/approvals.ts";
import { ApprovalStore } from "../permission/approval_store.ts";
import { SHOWN_DEPTH, shownJson } from "../permission/shown_json.ts";
import type { CliIo } from "./io.ts";

/** `pml approvals [--json]`: the pending approvals of the workspace. */
export async function runApprovals(config: Config, io: CliIo, json: boolean): Promise<number> {
  const list = await new ApprovalStore(config.workspace, config.pmlHome).list();
  if (json) {
    // Indented for people, compact below a few levels (deeply nested arguments stay small).
    io.stdout(shownJson(list, SHOWN_DEPTH + 3) + "\n");
    return 0;
  }
  if (list.length === 0) {
    io.stdout(`No pending approval in ${config.workspace}\n`);
    return 0;
  }
  for (const a of list) {
    const args = JSON.stringify(a.context.arguments ?? {});
    const state = a.decided ? `decided: ${a.decided.decision}` : `waiting (${a.mode})`;
    io.stdout(
      `${a.id}  ${String(a.context.tool ?? a.type)}  ${state}\n  ${a.description}\n${
        a.forHuman ? `  ${a.forHuman.description.replaceAll("\n", "\n  ")}\n` : ""
      }  arguments: ${args.length > 300 ? args.slice(0, 300) + "…" : args}\n`,
    );
  }
  return 0;
}

/**
 * `pml approve ID|--all [--always]` and `pml deny ID|--all`: a human's decision, written to the
 * same store as the page; the agent's next `pml:continue` gets the result.
 */
export async function runDecide(
  config: Config,
  io: CliIo,
  opts: { ids: string[]; all: boolean; decision: ApprovalDecision },
): Promise<number> {
  const store = new ApprovalStore(config.workspace, config.pmlHome);
  let ids = opts.ids;
  if (opts.all) {
    if (ids.length > 0) throw new TypeError("give approval ids or --all, not both");
    ids = (await store.list()).filter((a) => !a.decided).map((a) => a.id);
    if (ids.length === 0) {
      io.stdout(`No pending approval in ${config.workspace}\n`);
      return 0;
    }
  }
  if (ids.length === 0) throw new TypeError("give an approval id (see `pml approvals`) or --all");
  let failed = 0;
  for (const id of ids) {
    try {
      await store.decide(id, opts.decision, "cli");
      io.stdout(`${id}: ${opts.decision}\n`);
    } catch (err) {
      if (!(err instanceof PmlError)) throw err;
      io.stderr(`pml: ${err.message}\n`);
      failed++;
    }
  }
  return failed === 0 ? 0 : 1;
}
