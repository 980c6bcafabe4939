/**
 * Pins of stdio and http MCP servers in `.pml/mcp.lock` (DESIGN §12): the server's metadata
 * (`integrity` = SHA-256 of its canonical JSON, with the npm `package` or the http `proxyTo` and
 * `envRequired` written out) and, per tool, the SHA-256 of its definition (name, description,
 * input schema). The first use records; a later difference is a change the caller turns into an
 * `integrity` approval, whose text is {@link describePinChange}: field by field, old → new.
 *
 * Only hashes go into the lockfile. The canonical documents behind them are kept in the
 * content-addressed cache (`~/.pml/registry/modules/<hex>`), so that a change can show the old text
 * next to the new one; when the old document is not in the cache (another machine, a cleared cache)
 * the approval says so and shows the new definition whole.
 *
 * Here, the store: what is checked and recorded. The pinned form of a tool definition and its hash
 * are `tool_hash.ts`; how a difference is shown (to the human, to the agent), `pin_diff.ts`; both
 * re-exported.
 *
 * @module
 */
import type { AuditLog } from "../audit/audit.ts";
import { digest, integrityToHex } from "./integrity.ts";
import type { LockEntry, Lockfile } from "./lockfile.ts";
import type { ModuleCache } from "./module_cache.ts";
import {
  canonicalBytes,
  canonicalJson,
  definitionDoc,
  type ToolDefinition,
  toolHash,
} from "./tool_hash.ts";
import {
  changedFields,
  clip,
  diffJson,
  type PinCheck,
  type PinDifference,
  pinnedFields,
  type Unapproved,
} from "./pin_diff.ts";

export {
  canonicalJson,
  diffDefinitions,
  moduleToolDefinitions,
  type ToolDefinition,
  toolHash,
  toolHashes,
} from "./tool_hash.ts";
export {
  CHANGED_DESCRIPTION,
  changedFields,
  type ChangedPin,
  describePinChange,
  diffJson,
  type PinCheck,
  type PinDifference,
  type Unapproved,
  unapprovedListing,
} from "./pin_diff.ts";

/** What is pinned of a server's metadata (the `tools` map is pinned apart, see `checkTools`). */
export type MetadataPin = Omit<LockEntry, "tools" | "integrity" | "fetchedAt"> & {
  /** The metadata document whose canonical form is hashed into `integrity`. */
  readonly document: unknown;
};

/** Dependencies of {@link McpPins}. */
export interface McpPinsDeps {
  readonly lockfile: () => Promise<Lockfile>;
  readonly cache: ModuleCache;
  readonly audit: AuditLog;
  readonly now?: () => number;
}

/** See the module documentation. */
export class McpPins {
  readonly #d: McpPinsDeps;
  /** Tool definitions read back from the cache, by their hash (see `pinnedDefinitions`). */
  readonly #definitions = new Map<string, ToolDefinition>();

  constructor(deps: McpPinsDeps) {
    this.#d = deps;
  }

  /** The lock entry of `name` (4-part), if pinned. */
  async locked(name: string): Promise<LockEntry | undefined> {
    return (await this.#d.lockfile()).get(name);
  }

  /**
   * Compares the metadata of `name` with its pin: records it when there is none (`same`), and
   * returns the differences when its hash changed.
   */
  async checkMetadata(name: string, pin: MetadataPin): Promise<PinCheck> {
    const { document, ...fields } = pin;
    const bytes = canonicalBytes(document);
    const d = await this.#d.cache.put(bytes);
    const lock = await this.#d.lockfile();
    const locked = lock.get(name);
    const entry: LockEntry = {
      ...fields,
      integrity: d.integrity,
      fetchedAt: new Date((this.#d.now ?? Date.now)()).toISOString(),
      ...(locked?.tools ? { tools: locked.tools } : {}),
    };
    if (!locked) {
      await lock.record(name, entry);
      await this.#d.audit.write("integrity", {
        name,
        event: "recorded",
        integrity: d.integrity,
      });
      return { kind: "same" };
    }
    if (locked.integrity === d.integrity) {
      await lock.markChecked(name, (this.#d.now ?? Date.now)()); // in use: kept by the clean-up
      return { kind: "same" };
    }
    const old = await this.#document(locked.integrity);
    const lines = old === undefined
      ? [
        `the old metadata (${locked.integrity}) is not in the local cache; pinned: ${
          pinnedFields(locked)
        }; now: ${pinnedFields(entry)}`,
      ]
      : diffJson(old, document);
    const differences: PinDifference[] = [{
      subject: "metadata",
      kind: "changed",
      lines,
      fields: old === undefined ? [] : changedFields(old, document),
      oldHash: locked.integrity,
      newHash: d.integrity,
    }];
    return await this.#changed(name, "metadata", differences, async () => {
      await (await this.#d.lockfile()).record(name, entry);
    });
  }

  /**
   * Compares tool definitions with the `tools` pinned for `name` (whose metadata must be pinned
   * first). No pin yet: recorded. Removed tools only: recorded (a removed tool cannot be served).
   * A changed definition or a tool that appeared after pinning: the differences (a new tool is
   * withheld until a human approves it).
   */
  async checkTools(name: string, defs: readonly ToolDefinition[]): Promise<PinCheck> {
    const current: Record<string, string> = {};
    const docs = new Map<string, ToolDefinition>();
    for (const def of defs) {
      const doc = definitionDoc(def);
      current[def.name] = (await this.#d.cache.put(canonicalBytes(doc))).integrity;
      docs.set(def.name, doc);
    }
    const lock = await this.#d.lockfile();
    const locked = lock.get(name);
    if (!locked) return { kind: "same" }; // nothing to compare with: the metadata check records
    const save = async () => {
      const now = (await this.#d.lockfile()).get(name) ?? locked;
      await (await this.#d.lockfile()).record(name, { ...now, tools: sortedRecord(current) });
    };
    if (!locked.tools) {
      await save();
      await this.#d.audit.write("integrity", {
        name,
        event: "tools_recorded",
        tools: Object.keys(current).sort(),
      });
      return { kind: "same" };
    }
    const differences: PinDifference[] = [];
    for (const [tool, hash] of Object.entries(current)) {
      const old = locked.tools[tool];
      if (old === hash) continue;
      if (old === undefined) {
        differences.push({
          subject: tool,
          kind: "added",
          lines: [`new tool: ${clip(canonicalJson(docs.get(tool)))}`],
          fields: [],
          newHash: hash,
        });
        continue;
      }
      const oldDoc = await this.#document(old);
      differences.push({
        subject: tool,
        kind: "changed",
        lines: oldDoc === undefined
          ? [
            `the old definition (${old}) is not in the local cache; the new one is ${
              clip(canonicalJson(docs.get(tool)))
            }`,
          ]
          : diffJson(oldDoc, docs.get(tool)),
        fields: oldDoc === undefined ? [] : changedFields(oldDoc, docs.get(tool)),
        oldHash: old,
        newHash: hash,
      });
    }
    const same = Object.keys(current).length === Object.keys(locked.tools).length &&
      Object.keys(current).every((t) => locked.tools![t] === current[t]);
    if (same) return { kind: "same" };
    if (!differences.length) {
      await save();
      await this.#d.audit.write("integrity", {
        name,
        event: "tools_updated",
        removed: Object.keys(locked.tools).filter((t) => !(t in current)),
      });
      return { kind: "same" };
    }
    return await this.#changed(name, "tools", differences, save);
  }

  /**
   * The tool definitions pinned for `name`, read back from the content-addressed cache (for
   * `tools/list` of a server whose tools were read from the server itself). `undefined` when
   * nothing is pinned or a pinned definition is not in the cache.
   */
  async pinnedDefinitions(name: string): Promise<ToolDefinition[] | undefined> {
    const pinned = (await this.#d.lockfile()).get(name)?.tools;
    if (!pinned) return undefined;
    const defs: ToolDefinition[] = [];
    for (const hash of Object.values(pinned)) {
      // Content-addressed: a hash's definition, once read and verified, never changes.
      let doc = this.#definitions.get(hash);
      if (!doc) {
        const read = await this.#document(hash) as ToolDefinition | undefined;
        if (!read || typeof read.name !== "string") return undefined;
        this.#definitions.set(hash, doc = read);
      }
      defs.push(doc);
    }
    return defs;
  }

  /**
   * True when the definition of `tool` pinned for `name` says that it only reads
   * (`annotations.readOnlyHint: true`, and no `destructiveHint: true` beside it): the definition
   * the human saw at import or first use, not what the server says now. False when nothing is
   * pinned for it, or the pinned definition is not in the cache.
   */
  async pinnedReadOnly(name: string, tool: string): Promise<boolean> {
    const def = (await this.pinnedDefinitions(name))?.find((d) => d.name === tool);
    return def?.annotations?.readOnlyHint === true && def.annotations.destructiveHint !== true;
  }

  /**
   * The tools in `defs` that `tools/list` must not show as they are (DESIGN §13): `changed` when
   * the definition differs from the one pinned for `name` (listed with a placeholder), `added`
   * when the tool appeared after the tools were pinned (withheld). Nothing pinned: empty.
   */
  async changedTools(name: string, defs: readonly ToolDefinition[]): Promise<Unapproved> {
    const pinned = (await this.#d.lockfile()).get(name)?.tools;
    const out: Unapproved = new Map();
    if (!pinned) return out;
    for (const def of defs) {
      const old = pinned[def.name];
      if (old === undefined) out.set(def.name, "added");
      else if (old !== await toolHash(def)) out.set(def.name, "changed");
    }
    return out;
  }

  /**
   * The same for the tools of a metadata document (`tools: [{name, description, inputSchema}]`)
   * against the pinned metadata's: `added` for a tool the pinned document did not have, `changed`
   * for a different definition, every tool `changed` when the pinned document is not in the
   * cache. Empty when the metadata is the pinned one or nothing is pinned.
   */
  async changedMetadataTools(name: string, pin: MetadataPin): Promise<Unapproved> {
    const locked = (await this.#d.lockfile()).get(name);
    const out: Unapproved = new Map();
    if (!locked) return out;
    const d = await digest(canonicalBytes(pin.document));
    if (d.integrity === locked.integrity) return out;
    const tools = (doc: unknown) =>
      new Map(
        ((doc as { tools?: ToolDefinition[] })?.tools ?? []).map((t) => [t.name, canonicalJson(t)]),
      );
    const now = tools(pin.document);
    const old = await this.#document(locked.integrity);
    const before = old === undefined ? undefined : tools(old);
    for (const [tool, text] of now) {
      if (before && !before.has(tool)) out.set(tool, "added");
      else if (!before || before.get(tool) !== text) out.set(tool, "changed");
    }
    return out;
  }

  async #changed(
    name: string,
    what: "metadata" | "tools",
    differences: PinDifference[],
    record: () => Promise<void>,
  ): Promise<PinCheck> {
    const summary = differences.map(({ subject, oldHash, newHash }) => ({
      subject,
      old: oldHash,
      new: newHash,
    }));
    await this.#d.audit.write("integrity", { name, event: "changed", what, changes: summary });
    return {
      kind: "changed",
      name,
      what,
      differences,
      accept: async () => {
        await record();
        await this.#d.audit.write("integrity", { name, event: "approved", what, changes: summary });
      },
      refuse: async () => {
        await this.#d.audit.write("integrity", { name, event: "refused", what, changes: summary });
      },
    };
  }

  /** The cached canonical document of an integrity, parsed; `undefined` when not cached. */
  async #document(integrity: string): Promise<unknown> {
    const hex = integrityToHex(integrity);
    if (!hex) return undefined;
    try {
      const bytes = await this.#d.cache.get(hex);
      return bytes ? JSON.parse(new TextDecoder().decode(bytes)) : undefined;
    } catch {
      return undefined; // tampered (removed by the cache) or not JSON: unknown
    }
  }
}

function sortedRecord(r: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)));
}
