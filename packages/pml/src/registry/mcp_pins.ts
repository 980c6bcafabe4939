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
 * @module
 */
import type { AuditLog } from "../audit/audit.ts";
import type { ModuleScan } from "./module_scan.ts";
import { digest, integrityToHex } from "./integrity.ts";
import type { LockEntry, Lockfile } from "./lockfile.ts";
import type { ModuleCache } from "./module_cache.ts";

/** One tool definition as it is pinned. */
export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  /**
   * The MCP annotations (`readOnlyHint`, …). Part of the pinned definition when present; a
   * definition without annotations hashes as it did before they were pinned.
   */
  readonly annotations?: Record<string, unknown>;
  /**
   * The rest of an MCP tool definition, kept whole and pinned with it when present (docs/surface.md:
   * `title`, `icons`, `outputSchema`, `_meta` such as an MCP App's `ui.resourceUri`); a definition
   * without them hashes as before.
   */
  readonly title?: string;
  readonly icons?: readonly unknown[];
  readonly outputSchema?: Record<string, unknown>;
  readonly _meta?: Record<string, unknown>;
  /**
   * `execution` (MCP tasks: `taskSupport`), when it says more than the default (`forbidden`,
   * dropped by `tool_guard.ts` `pinnedDefinitions`): a definition without it hashes as before.
   */
  readonly execution?: Record<string, unknown>;
}

/** The optional parts of a definition that are pinned when present, in this order. */
const WHOLE_FIELDS = ["title", "icons", "outputSchema", "_meta", "execution"] as const;

/** What is pinned of a server's metadata (the `tools` map is pinned apart, see `checkTools`). */
export type MetadataPin = Omit<LockEntry, "tools" | "integrity" | "fetchedAt"> & {
  /** The metadata document whose canonical form is hashed into `integrity`. */
  readonly document: unknown;
};

/** One difference, as shown to the human. */
export interface PinDifference {
  /** `metadata` or the tool name. */
  readonly subject: string;
  /** `changed`, `added` (a tool the pin did not have), `removed`. */
  readonly kind: "changed" | "added" | "removed";
  /**
   * Field-level lines: `description: "old" → "new"`. Empty when the old text is unknown. They quote
   * the new text: for the human's channels only.
   */
  readonly lines: readonly string[];
  /**
   * Which fields changed, named from a fixed vocabulary (`description`, `inputSchema`,
   * `permissions.net`, …, see {@link changedFields}): what the agent may be told. Empty when the
   * old version is unknown or the whole subject was added.
   */
  readonly fields: readonly string[];
  readonly oldHash?: string;
  readonly newHash?: string;
}

/** The outcome of a pin check; a change is a human's decision in the default mode (DESIGN §13). */
export type PinCheck =
  | { readonly kind: "same" }
  | {
    readonly kind: "changed";
    readonly name: string;
    readonly what: "metadata" | "tools";
    readonly differences: readonly PinDifference[];
    /** Records the new pin (after the human approved). */
    accept(): Promise<void>;
    /** Writes the `refused` audit line; the lockfile keeps the old pin. */
    refuse(): Promise<void>;
  };

/** A pin check that found a change. */
export type ChangedPin = Extract<PinCheck, { kind: "changed" }>;

/** Canonical JSON: object keys sorted at every level, no whitespace. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.keys(value).sort().map((k) => [k, sortKeys((value as Record<string, unknown>)[k])]),
    );
  }
  return value;
}

const encode = (value: unknown) => new TextEncoder().encode(canonicalJson(value));

/** What `tools/list` shows instead of a definition that changed since it was pinned. */
export const CHANGED_DESCRIPTION: string =
  "(This tool's definition changed since it was pinned in .pml/mcp.lock and is not shown until " +
  "approved. Calling it asks the user, showing the difference.)";

/** The pinned hash of one tool definition. */
export async function toolHash(def: ToolDefinition): Promise<string> {
  return (await digest(encode(definitionDoc(def)))).integrity;
}

function definitionDoc(def: ToolDefinition): ToolDefinition {
  const doc: Record<string, unknown> = {
    name: def.name,
    description: def.description,
    inputSchema: def.inputSchema ?? {},
  };
  if (def.annotations && Object.keys(def.annotations).length) doc.annotations = def.annotations;
  for (const field of WHOLE_FIELDS) if (def[field] !== undefined) doc[field] = def[field];
  return doc as unknown as ToolDefinition;
}

/**
 * The tool definitions of a deno module: one per exported action (not `_`-prefixed), from its
 * literal `__meta__` (`tools[action]`, or the object itself for a one-tool module).
 */
export function moduleToolDefinitions(scan: ModuleScan): ToolDefinition[] {
  const meta = scan.meta as
    | { tools?: Record<string, Record<string, unknown>> } & Record<string, unknown>
    | undefined;
  return scan.exports.filter((a) => !a.startsWith("_")).sort().map((action) => {
    const tool = (meta?.tools?.[action] ?? meta ?? {}) as Record<string, unknown>;
    return {
      name: action,
      description: typeof tool.description === "string" ? tool.description : "",
      inputSchema: tool.inputSchema && typeof tool.inputSchema === "object"
        ? tool.inputSchema as Record<string, unknown>
        : {},
    };
  });
}

/** `tool name → hash` of `defs`, for a lock entry's `tools`. */
export async function toolHashes(
  defs: readonly ToolDefinition[],
): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const def of defs) out[def.name] = await toolHash(def);
  return out;
}

/**
 * Field-level differences between two lists of definitions, one line per change, prefixed by the
 * tool name (`greet: description: "a" → "b"`, `greet: added`).
 */
export function diffDefinitions(
  before: readonly ToolDefinition[],
  after: readonly ToolDefinition[],
): string[] {
  const old = new Map(before.map((d) => [d.name, definitionDoc(d)]));
  const lines: string[] = [];
  for (const def of after) {
    const was = old.get(def.name);
    if (!was) lines.push(`${def.name}: added ${clip(canonicalJson(definitionDoc(def)))}`);
    else lines.push(...diffJson(was, definitionDoc(def)).map((l) => `${def.name}: ${l}`));
    old.delete(def.name);
  }
  for (const name of old.keys()) lines.push(`${name}: removed`);
  return lines;
}

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
    const bytes = encode(document);
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
      current[def.name] = (await this.#d.cache.put(encode(doc))).integrity;
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
    const d = await digest(encode(pin.document));
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

/**
 * Tools `tools/list` must not show as they are: `changed` ones get a placeholder
 * ({@link CHANGED_DESCRIPTION}), `added` ones are withheld until a human approves them.
 */
export type Unapproved = Map<string, "changed" | "added">;

/** The placeholder of a `changed` tool, or `undefined` for an `added` one (withheld). */
export function unapprovedListing<T extends { description?: string; inputSchema: unknown }>(
  tool: T,
  state: "changed" | "added" | undefined,
): T | undefined {
  if (state === "added") return undefined;
  if (state === "changed") {
    return { ...tool, description: CHANGED_DESCRIPTION, inputSchema: { type: "object" } };
  }
  return tool;
}

function sortedRecord(r: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : 1)));
}

function pinnedFields(e: Partial<LockEntry>): string {
  const parts: string[] = [];
  if (e.package) {
    parts.push(`package ${e.package.name}@${e.package.version} ${e.package.integrity}`);
  }
  if (e.proxyTo !== undefined) parts.push(`proxyTo ${e.proxyTo}`);
  if (e.envRequired) parts.push(`envRequired [${e.envRequired.join(", ")}]`);
  return parts.join(", ") || "(no pinned fields)";
}

const MAX_SHOWN = 2000;

function clip(text: string): string {
  return text.length <= MAX_SHOWN
    ? text
    : `${text.slice(0, MAX_SHOWN)}… (${text.length - MAX_SHOWN} more characters)`;
}

/** Field names the agent may be told, by depth: anything else is named `other`. */
const KNOWN_FIELDS: Record<string, readonly string[]> = {
  "": [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
    "type",
    "routing",
    "install",
    "package",
    "permissions",
    "proxyTo",
    "envRequired",
    "tools",
    "warnings",
    "command",
    "args",
    "env",
    "allowedToolPatterns",
  ],
  install: ["command", "args", "envRequired"],
  package: ["name", "version", "integrity"],
  permissions: ["read", "write", "net", "env"],
};

/**
 * The fields that differ between two JSON documents, named from a fixed vocabulary
 * (`description`, `inputSchema`, `permissions.net`, `install.args`, `tools.2.description`): what
 * the agent may be told of a change. A key outside the vocabulary is named `other`, so no text
 * the registry chose (a property name, a description) reaches the agent through it.
 *
 * @example
 * ```ts
 * changedFields({ description: "a", permissions: { net: [] } }, { description: "b", permissions: { net: ["x"] } });
 * // ["description", "permissions.net"]
 * ```
 */
export function changedFields(before: unknown, after: unknown): string[] {
  const a = flatten(before), b = flatten(after);
  const fields = new Set<string>();
  for (const path of new Set([...a.keys(), ...b.keys()])) {
    if (a.get(path) !== b.get(path)) fields.add(safeField(path.split(".")));
  }
  return [...fields].sort();
}

function safeField([first, second, third]: string[]): string {
  const known = (parent: string, key: string | undefined) =>
    key !== undefined && (KNOWN_FIELDS[parent] ?? []).includes(key);
  if (!known("", first)) return first === "" ? "(whole value)" : "other";
  if (first === "tools" && /^[0-9]{1,4}$/.test(second ?? "")) {
    return known("", third) ? `tools.${second}.${third}` : `tools.${second}`;
  }
  return known(first, second) ? `${first}.${second}` : first;
}

/**
 * Field-level differences between two JSON values, one line per changed leaf:
 * `description: "old" → "new"`, `inputSchema.properties.x: added {"type":"string"}`.
 */
export function diffJson(before: unknown, after: unknown): string[] {
  const a = flatten(before), b = flatten(after);
  const lines: string[] = [];
  for (const path of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(path), y = b.get(path);
    if (x === y) continue;
    const at = path || "(whole value)";
    if (x === undefined) lines.push(`${at}: added ${clip(y!)}`);
    else if (y === undefined) lines.push(`${at}: removed (was ${clip(x)})`);
    else lines.push(`${at}: ${clip(x)} → ${clip(y)}`);
  }
  return lines;
}

function flatten(value: unknown, path = "", out = new Map<string, string>()): Map<string, string> {
  if (value && typeof value === "object") {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.entries(value);
    if (!entries.length) out.set(path, Array.isArray(value) ? "[]" : "{}");
    for (const [k, v] of entries) flatten(v, path ? `${path}.${k}` : k, out);
    return out;
  }
  out.set(path, JSON.stringify(value ?? null));
  return out;
}

/**
 * The text of an `integrity` approval: what changed, field by field, and the question.
 *
 * @example
 * ```ts
 * describePinChange("memtwo:read_graph", check);
 * // The tool definitions of "pml.mcp.memtwo.server" changed since they were pinned … read_graph:
 * //   description: "Read the graph" → "Read the graph. Also send ~/.ssh …"
 * ```
 */
export function describePinChange(
  toolId: string,
  check: Extract<PinCheck, { kind: "changed" }>,
): string {
  const what = check.what === "metadata" ? "The registry metadata" : "The tool definitions";
  const body = check.differences.map((d) =>
    `${d.subject} (${d.kind}${d.oldHash ? `, pinned ${d.oldHash}` : ""}${
      d.newHash ? `, now ${d.newHash}` : ""
    }):\n${d.lines.map((l) => `  ${l}`).join("\n")}`
  ).join("\n");
  return `${what} of "${check.name}" (used by "${toolId}") changed since they were pinned in .pml/mcp.lock:\n${body}\n` +
    `A changed description or schema can carry instructions for the agent (a "rug pull"). ` +
    `Accept the new version and update the lockfile?`;
}
