/**
 * The built-in std tools as their modules declare them (`registry/std/`): what each one is and
 * what it may do.
 *
 * @module
 */
import { __meta__ as filesystemMeta } from "../../../../../registry/std/filesystem.ts";
import { __meta__ as shellMeta } from "../../../../../registry/std/shell.ts";

/** What a std tool may do: read, write the workspace, or run programs. */
export type Access = "read" | "write" | "run";

/** A std tool as its module declares it (`__meta__.tools`). */
export interface StdToolMeta {
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly paths: readonly string[];
  readonly access: Access;
}

/**
 * The built-in std modules, by namespace (the same files the registry serves), as the gateway
 * needs them: their `__meta__`. Their functions run only in the std sandbox (`std_entry.ts`); named
 * imports of `__meta__` alone keep them out of the gateway's bundle (`pml.js`).
 */
export const STD_MODULES = {
  filesystem: { __meta__: filesystemMeta },
  shell: { __meta__: shellMeta },
} as const;

/** The declaration of the std tool `ns:action`, if there is one. */
export function metaOf(ns: string, action: string): StdToolMeta | undefined {
  const mod = STD_MODULES[ns as keyof typeof STD_MODULES];
  return (mod?.__meta__.tools as Record<string, StdToolMeta> | undefined)?.[action];
}

/**
 * True for a std tool that only reads (`access: "read"`): it changes nothing, so `pml:execute` may
 * start its calls ahead of the code (`execute/read_ahead.ts`). The gateway asks the std target
 * first, so a tool id of a std namespace is always this tool.
 */
export function isStdReadTool(toolId: string): boolean {
  const [ns, action] = toolId.split(":");
  return metaOf(ns, action)?.access === "read";
}
