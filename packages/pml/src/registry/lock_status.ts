/**
 * The lockfile as `pml status` shows it: each entry and its state, read synchronously and without
 * writing anything (the clean-up happens when a session loads the lockfile).
 *
 * @module
 */
import { join } from "node:path";
import { errorMessage } from "../errors.ts";
import { sha256Hex } from "../sha256.ts";
import type { Permissions } from "../permission/patterns.ts";
import { integrityToHex } from "./integrity.ts";
import { lockEntryKept, lockfilePath } from "./lockfile.ts";

/** State of one lock entry. */
export type LockState =
  | "cached"
  | "not cached"
  | "cache tampered"
  | "not in allow/ask (dropped on next load)";

/** One row of `pml status`. */
export interface LockStatusRow {
  readonly name: string;
  readonly fqdn: string;
  readonly type: string;
  readonly integrity: string;
  readonly fetchedAt: string;
  readonly state: LockState;
  /** What else is pinned: `package name@version`, `proxyTo <url>`, `N tools`. */
  readonly pins: string;
}

/** The lockfile's rows, or the problem that prevents reading it. */
export function lockStatus(
  workspace: string,
  pmlHome: string,
  permissions: Permissions,
): { path: string; rows: LockStatusRow[]; error?: string } {
  const path = lockfilePath(workspace);
  let file: { entries?: Record<string, Omit<LockStatusRow, "name" | "state" | "pins"> & Pinned> };
  try {
    file = JSON.parse(Deno.readTextFileSync(path));
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { path, rows: [] };
    return { path, rows: [], error: `corrupt: ${errorMessage(err)}` };
  }
  if (!file || typeof file.entries !== "object") {
    return { path, rows: [], error: "corrupt: no entries" };
  }
  const rows = Object.entries(file.entries).sort(([a], [b]) => (a < b ? -1 : 1)).map(
    ([name, e]) => {
      let state: LockState;
      let kept = false;
      try {
        kept = lockEntryKept(name, e.type as "deno", permissions);
      } catch { /* unparsable name */ }
      if (!kept) state = "not in allow/ask (dropped on next load)";
      else state = cacheState(pmlHome, integrityToHex(String(e.integrity)));
      return {
        name,
        fqdn: e.fqdn,
        type: e.type,
        integrity: e.integrity,
        fetchedAt: e.fetchedAt,
        state,
        pins: [
          e.package ? `package ${e.package.name}@${e.package.version}` : "",
          e.proxyTo ? `proxyTo ${e.proxyTo}` : "",
          e.tools ? `${Object.keys(e.tools).length} tools` : "",
        ].filter(Boolean).join(", "),
      };
    },
  );
  return { path, rows };
}

interface Pinned {
  package?: { name: string; version: string };
  proxyTo?: string;
  tools?: Record<string, string>;
}

function cacheState(pmlHome: string, hex: string | undefined): LockState {
  if (!hex) return "cache tampered";
  let bytes: Uint8Array;
  try {
    bytes = Deno.readFileSync(join(pmlHome, "registry", "modules", hex));
  } catch {
    return "not cached";
  }
  return sha256Hex(bytes) === hex ? "cached" : "cache tampered";
}
