import type { Permissions } from "../permission/patterns.ts";

/** The cloud used when `.pml.json` names none. Contacted only when `PML_API_KEY` is set. */
export const DEFAULT_CLOUD_URL = "https://pml.casys.ai";

/**
 * Days after which a `.pml/mcp.lock` entry that no call has checked (or fetched) is dropped on
 * load (story 14.7, task 11.3); `.pml.json` `lockfile.maxAgeDays` changes it, 0 keeps pins forever.
 */
export const DEFAULT_LOCK_MAX_AGE_DAYS = 90;

/**
 * At most this many `private_mcps` in one `.pml.json` (each is a server `pml` pins, lists and may
 * start): a file with more is refused with this number, and `pml import` never writes past it.
 */
export const MAX_PRIVATE_MCPS = 200;

/** Default port of `pml serve`. */
export const DEFAULT_PORT = 3003;

/** Read-only filesystem tools: allowed by default. */
export const FILESYSTEM_READ_TOOLS = [
  "filesystem:read_file",
  "filesystem:list_directory",
  "filesystem:directory_tree",
  "filesystem:search_files",
  "filesystem:get_file_info",
] as const;

/** Filesystem tools that change files: asked by default. */
export const FILESYSTEM_WRITE_TOOLS = [
  "filesystem:write_file",
  "filesystem:edit_file",
  "filesystem:create_directory",
  "filesystem:move_file",
] as const;

/**
 * Built-in permissions, used only when there is no `.pml.json` (DESIGN §5), and written by
 * `pml init`: filesystem reads allowed, writes and shell asked, everything else asked.
 */
export const DEFAULT_PERMISSIONS: Permissions = Object.freeze({
  allow: Object.freeze([...FILESYSTEM_READ_TOOLS]),
  ask: Object.freeze([...FILESYSTEM_WRITE_TOOLS, "shell:exec"]),
  deny: Object.freeze([]),
});

/**
 * The placeholders of registry metadata (`${workspace}`, `${packageDir}`), expanded by PML when it
 * launches a stdio server, never read from the environment. Kept as written inside `private_mcps`
 * (so a registry entry can be pasted there as it is); an error anywhere else.
 */
export const METADATA_PLACEHOLDERS: ReadonlySet<string> = new Set(["workspace", "packageDir"]);
