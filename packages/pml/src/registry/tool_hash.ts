/**
 * The pinned form of an MCP tool definition (DESIGN §12): the definition a pin covers (name,
 * description, input schema, and annotations, title, icons, output schema, `_meta` and `execution`
 * when present), its canonical JSON and the SHA-256 that `.pml/mcp.lock` keeps of it, and the
 * definitions of a deno module. What a pin check does with them is `mcp_pins.ts`; how a
 * difference is shown, `pin_diff.ts`.
 *
 * @module
 */
import type { ModuleScan } from "./module_scan.ts";
import { digest } from "./integrity.ts";
import { canonicalJson } from "../canonical_json.ts";
import { clip, diffJson } from "./pin_diff.ts";

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

export { canonicalJson };

/** The bytes that are hashed and cached: the canonical JSON of `value`. */
export const canonicalBytes = (value: unknown): Uint8Array =>
  new TextEncoder().encode(canonicalJson(value));

/** The pinned hash of one tool definition. */
export async function toolHash(def: ToolDefinition): Promise<string> {
  return (await digest(canonicalBytes(definitionDoc(def)))).integrity;
}

/** The document of a definition that is hashed: what is pinned of it, in a fixed shape. */
export function definitionDoc(def: ToolDefinition): ToolDefinition {
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
