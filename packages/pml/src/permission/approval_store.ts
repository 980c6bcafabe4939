import { join } from "node:path";
import { PmlError } from "../errors.ts";
import { writeFileAtomic } from "../config/write_json.ts";
import type { ApprovalDecision, ApprovalRequest } from "./approvals.ts";

/** Who decides a pending approval: the agent (`pml:continue`) or only a human. */
export type ApprovalMode = "agent" | "human";

/** A pending approval as stored under `.pml/approvals/` (a control file: no tool writes it). */
export interface StoredApproval extends ApprovalRequest {
  readonly id: string;
  readonly mode: ApprovalMode;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** The tool call to run again when `pml` restarted before the answer (tool approvals only). */
  readonly replay?: { readonly tool: string; readonly arguments: Record<string, unknown> };
  /**
   * The `pml` that asked: an approval without `replay` (an install inside a call, a paused
   * `pml:execute`) can be continued only while it runs.
   */
  readonly owner?: ApprovalOwner;
}

/** A `pml` process: its pid and, where `/proc` tells it, its start time (a reused pid differs). */
export interface ApprovalOwner {
  readonly pid: number;
  readonly start?: string;
}

/** A human's decision, written once by the page or the CLI. */
export interface StoredDecision {
  readonly decision: ApprovalDecision;
  readonly via: "page" | "cli";
  readonly at: number;
}

/**
 * The most one stored approval may take (bytes of compact JSON). Arguments past it cannot be
 * reviewed on a page anyway; the call is refused with what to do instead.
 */
export const MAX_STORED_APPROVAL_BYTES = 2 * 1024 * 1024;

const ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The pending approvals of one workspace, shared by every `pml` started there, the approval page
 * and `pml approve`: one file per approval (`<id>.json`, written by the `pml` that asked) and one
 * per decision (`<id>.decision.json`, created exclusively: the first decision wins, none is lost
 * to a concurrent writer). Expired entries are removed when listed.
 *
 * The part only a human may see (`forHuman`: a changed definition's new text, which may be an
 * injection aimed at the agent) is kept apart, in `<PML home>/approvals/<id>.json`: the workspace
 * is readable by the agent's read tools and shell, PML's home is not (outside every grant, and on
 * the OS sandbox's deny list).
 */
export class ApprovalStore {
  readonly dir: string;
  readonly humanDir: string;
  readonly #now: () => number;

  constructor(workspace: string, pmlHome: string, now: () => number = Date.now) {
    this.dir = join(workspace, ".pml", "approvals");
    this.humanDir = join(pmlHome, "approvals");
    this.#now = now;
  }

  /**
   * Stores a pending approval as compact JSON (indentation would grow with the square of the
   * arguments' nesting). Over {@link MAX_STORED_APPROVAL_BYTES}: `APPROVAL_TOO_LARGE`, nothing
   * written.
   */
  async put(approval: StoredApproval): Promise<void> {
    const { forHuman, ...shared } = approval;
    const text = JSON.stringify(shared) + "\n";
    const humanText = forHuman ? JSON.stringify({ forHuman }) + "\n" : "";
    const bytes = new TextEncoder().encode(text + humanText).length;
    if (bytes > MAX_STORED_APPROVAL_BYTES) {
      const what = String(approval.context.tool ?? approval.type);
      throw new PmlError(
        "APPROVAL_TOO_LARGE",
        `Cannot ask for approval of "${what}": the call's arguments take ${mb(bytes)} MB, more ` +
          `than an approval may hold (${mb(MAX_STORED_APPROVAL_BYTES)} MB) for a human to ` +
          `review; nothing was run. Make smaller calls (write a file in parts), or allow the ` +
          `tool in .pml.json.`,
      );
    }
    if (humanText) {
      await Deno.mkdir(this.humanDir, { recursive: true, mode: 0o700 });
      await writeFileAtomic(this.#humanPath(approval.id), humanText);
    }
    await writeFileAtomic(this.#path(approval.id), text);
  }

  /** The approval `id` while it is pending and unexpired, else `undefined`. */
  async get(id: string): Promise<StoredApproval | undefined> {
    if (!ID.test(id)) return undefined;
    const approval = await readJson<StoredApproval>(this.#path(id));
    if (!approval) return undefined;
    if (approval.expiresAt <= this.#now()) {
      await this.remove(id);
      return undefined;
    }
    const human = await readJson<Pick<StoredApproval, "forHuman">>(this.#humanPath(id));
    return human?.forHuman ? { ...approval, forHuman: human.forHuman } : approval;
  }

  async decision(id: string): Promise<StoredDecision | undefined> {
    if (!ID.test(id)) return undefined;
    return await readJson<StoredDecision>(this.#path(id, ".decision"));
  }

  /** Pending approvals, oldest first, with their decision if a human gave one. */
  async list(): Promise<(StoredApproval & { decided?: StoredDecision })[]> {
    const out: (StoredApproval & { decided?: StoredDecision })[] = [];
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(this.dir));
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return out;
      throw err;
    }
    for (const e of entries) {
      const id = e.name.endsWith(".json") ? e.name.slice(0, -".json".length) : "";
      if (!ID.test(id)) continue;
      const approval = await this.get(id);
      if (!approval) continue;
      const decided = await this.decision(id);
      out.push(decided ? { ...approval, decided } : approval);
    }
    return out.sort((a, b) => a.createdAt - b.createdAt);
  }

  /**
   * Records a human's decision on a pending approval. Refused when it is unknown, expired or
   * decided already (the first decision stands).
   */
  async decide(id: string, decision: ApprovalDecision, via: "page" | "cli"): Promise<void> {
    if (!(await this.get(id))) {
      throw new PmlError(
        "APPROVAL_NOT_FOUND",
        `No pending approval "${id}" in this workspace (answered already, or expired)`,
      );
    }
    const record: StoredDecision = { decision, via, at: this.#now() };
    try {
      await Deno.writeTextFile(this.#path(id, ".decision"), JSON.stringify(record) + "\n", {
        createNew: true,
      });
    } catch (err) {
      if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
      const first = await this.decision(id);
      throw new PmlError(
        "APPROVAL_DECIDED",
        `The approval "${id}" was decided already ("${first?.decision}")`,
      );
    }
  }

  /**
   * Takes the approval `id` for its one use: true for exactly one caller, whatever else races for
   * it in this or another `pml` (its file is removed, which one unlink does), then its decision
   * and its human part go too; false when it was taken already.
   */
  async claim(id: string): Promise<boolean> {
    if (!ID.test(id)) return false;
    try {
      await Deno.remove(this.#path(id));
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return false;
      throw err;
    }
    await this.remove(id);
    return true;
  }

  async remove(id: string): Promise<void> {
    await Deno.remove(this.#path(id)).catch(() => {});
    await Deno.remove(this.#path(id, ".decision")).catch(() => {});
    await Deno.remove(this.#humanPath(id)).catch(() => {});
  }

  #path(id: string, kind = ""): string {
    return join(this.dir, `${id}${kind}.json`);
  }

  #humanPath(id: string): string {
    return join(this.humanDir, `${id}.json`);
  }
}

function mb(bytes: number): string {
  return (bytes / 1024 / 1024).toFixed(1);
}

async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await Deno.readTextFile(path)) as T;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound || err instanceof SyntaxError) return undefined;
    throw err;
  }
}
