import type { WireError } from "../sandbox/protocol.ts";
import { canonicalJson } from "../canonical_json.ts";

/** The outcome of one completed `mcp.*` call, as the code saw it. */
export type CallOutcome =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: WireError };

/** One completed call of an execution, by its position in the order the code issued them. */
export interface JournalEntry {
  readonly index: number;
  readonly tool: string;
  /** Canonical JSON of the arguments (keys sorted). */
  readonly args: string;
  readonly outcome: CallOutcome;
  readonly routing: string;
  readonly ms: number;
}

/**
 * The calls an execution completed before it paused for an approval (DESIGN §5: resuming must not
 * repeat side effects). The continuation re-runs the code from the start; while the code issues
 * the same calls (same tool, same arguments, same order) the recorded outcomes are handed back
 * without calling the tool again. The first call that differs ends the replay: from there on,
 * every call runs live (and passes permission again).
 */
export class Journal {
  readonly #entries = new Map<number, JournalEntry>();
  #inSync = true;

  constructor(entries: Iterable<JournalEntry> = []) {
    for (const e of entries) this.#entries.set(e.index, e);
  }

  /** The recorded outcome for call `index`, if the code is still on the recorded path. */
  replay(index: number, tool: string, args: unknown): JournalEntry | undefined {
    if (!this.#inSync) return undefined;
    const entry = this.#entries.get(index);
    if (!entry) return undefined;
    if (entry.tool !== tool || entry.args !== canonicalJson(args)) {
      // A different path: outcomes recorded from here on belong to the old one.
      this.#inSync = false;
      for (const i of [...this.#entries.keys()]) if (i >= index) this.#entries.delete(i);
      return undefined;
    }
    return entry;
  }

  /** Records a completed live call (replacing nothing that was replayed). */
  record(entry: JournalEntry): void {
    this.#entries.set(entry.index, entry);
  }

  /** Entries in call order (what a continuation starts from). */
  get entries(): JournalEntry[] {
    return [...this.#entries.values()].sort((a, b) => a.index - b.index);
  }
}
