/**
 * The `integrity` approvals (DESIGN §13 "Who decides"): a changed pin, a tool that appeared after
 * pinning, or registry code whose bytes changed. In the default mode only a human decides them
 * (`approvalMode`), and the two audiences get different text:
 *
 * - the agent (the result, an elicitation) learns **what** changed: the server, the tools, the
 *   names of the fields (from a fixed vocabulary, {@link changedFields}) and the hashes, and that
 *   it waits for the human. Never the new description or schema, which may carry instructions
 *   meant for it.
 * - the human's channels (the approval page, `pml approvals`) get `forHuman`: the whole
 *   difference, old → new, field by field.
 *
 * Any target that pins definitions (registry stdio and http servers, private MCPs' own tool
 * lists) asks through {@link integrityRequest}.
 *
 * @module
 */
import type { ApprovalRequest } from "../permission/approvals.ts";
import type { IntegrityChange } from "./loader.ts";
import { type ChangedPin, describePinChange, type PinDifference } from "./mcp_pins.ts";

/** Names the agent may see: a tool or server name of ordinary characters, else a placeholder. */
export function safeName(name: string): string {
  return /^[A-Za-z0-9_.:@/-]{1,80}$/.test(name) ? name : "(a name that is not shown)";
}

const WAITS = "By default a human decides it, on the approval page or with `pml approve` in a " +
  "terminal; the new text is not shown here (a changed description or schema can carry " +
  "instructions).";

function agentLine(d: PinDifference): string {
  const subject = d.subject === "metadata" ? "its metadata" : `tool "${safeName(d.subject)}"`;
  if (d.kind === "added") {
    return `new ${subject} (${d.newHash ?? "unhashed"}), withheld until a human approves it`;
  }
  if (d.kind === "removed") return `${subject} removed`;
  const fields = d.fields.length ? d.fields.join(", ") : "the old version is not cached here";
  return `${subject} changed (${fields}; pinned ${d.oldHash}, now ${d.newHash})`;
}

/**
 * The approval of `changes` (the changed pins of one server), met while calling `toolId`:
 * agent-safe `description` and `context`, and the whole difference in `forHuman`. `newTool`: the
 * called tool itself appeared after pinning (the agent is told it waits as a new tool).
 *
 * @example
 * ```ts
 * const check = await pins.checkTools(name, defs);
 * if (check.kind === "changed") return await ctx.ask(integrityRequest(call.toolId, [check]), resume);
 * ```
 */
export function integrityRequest(
  toolId: string,
  changes: readonly ChangedPin[],
  opts: { readonly newTool?: boolean } = {},
): ApprovalRequest {
  const name = changes[0]?.name ?? "";
  const differences = changes.flatMap((c) => c.differences);
  const added = differences.filter((d) => d.kind === "added");
  const lead = opts.newTool || added.length === differences.length
    ? `New tool, waiting for approval: "${safeName(toolId)}" appeared in "${
      safeName(name)
    }" after its tools were pinned in .pml/mcp.lock`
    : `The definition of "${safeName(name)}" (used by "${
      safeName(toolId)
    }") changed since it was pinned in .pml/mcp.lock`;
  return {
    type: "integrity",
    description: `${lead}: ${differences.map(agentLine).join("; ")}. ${WAITS}`,
    context: {
      tool: toolId,
      name,
      what: [...new Set(changes.map((c) => c.what))].join(","),
      changes: differences.map((d) => ({
        subject: d.subject === "metadata" ? "metadata" : safeName(d.subject),
        kind: d.kind,
        fields: d.fields,
        ...(d.oldHash ? { old: d.oldHash } : {}),
        ...(d.newHash ? { new: d.newHash } : {}),
      })),
    },
    forHuman: {
      description: changes.map((c) => describePinChange(toolId, c)).join("\n"),
      context: { changes: differences },
    },
  };
}

/**
 * The approval for registry code whose bytes changed since they were pinned: the hashes for the
 * agent, the tool definition differences (`__meta__`, new text) for the human only.
 */
export function codeIntegrityRequest(
  toolId: string,
  changes: readonly IntegrityChange[],
): ApprovalRequest {
  const hashes = changes.map((c) =>
    `${c.name}: locked ${c.old.integrity} (${c.old.fqdn}, fetched ${c.old.fetchedAt}), now ${c.new.integrity} (${c.new.fqdn})`
  );
  const detail = changes.map((c, i) =>
    hashes[i] +
    (c.tools === undefined
      ? ""
      : c.tools.length
      ? `; tool definitions: ${c.tools.join("; ")}`
      : "; tool definitions unchanged")
  );
  const ask = "This can be a legitimate update or a tampered registry or network.";
  return {
    type: "integrity",
    description: `The code of "${toolId}" changed since it was pinned in .pml/mcp.lock. ${
      hashes.join("; ")
    }. ${ask} ${WAITS}`,
    context: {
      tool: toolId,
      changes: changes.map((c) => ({ name: c.name, old: c.old, new: c.new })),
    },
    forHuman: {
      description: `The code of "${toolId}" changed since it was pinned in .pml/mcp.lock. ${
        detail.join("; ")
      }. ${ask} Run the new code and update the lockfile?`,
      context: { changes },
    },
  };
}
