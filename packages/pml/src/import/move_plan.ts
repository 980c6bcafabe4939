/**
 * What `pml import --move` removes from which file. A server the workspace owns (a project file, or
 * this project's entry of `~/.claude.json`) is removed from its client's file: from now on the
 * agent reaches it through PML. A server of the user's own configuration (`~/.claude.json`'s top
 * level, `~/.codex/config.toml`, `~/.gemini/settings.json`, …) serves every project of that user,
 * which the import into this workspace does not reach: it is left in place unless the user says
 * `--move-user`. Servers of one file are grouped so that the file is written once.
 *
 * @module
 */
import type { ClientFile } from "./client_files.ts";
import type { ImportedServer } from "./to_private_mcp.ts";

/** One file to change: the objects to remove servers from, and those servers. */
export interface FileMove {
  readonly file: ClientFile;
  readonly removals: { at: readonly string[]; names: string[]; env: Record<string, string> }[];
  readonly servers: ImportedServer[];
}

/** The plan: files to change, and the user-level servers left in place (by file path). */
export interface MovePlan {
  readonly moves: FileMove[];
  readonly left: Map<string, ImportedServer[]>;
}

/**
 * Plans the move of `servers` (their files in `sources`); `user`: the user-level files too.
 *
 * @example
 * ```ts
 * planMove(found.servers, found.sources, { user: false }).left; // ~/.gemini/settings.json → [...]
 * ```
 */
export function planMove(
  servers: readonly ImportedServer[],
  sources: ReadonlyMap<ImportedServer, ClientFile>,
  opts: { readonly user: boolean },
): MovePlan {
  const moves = new Map<string, FileMove>();
  const left = new Map<string, ImportedServer[]>();
  for (const s of servers) {
    const file = sources.get(s);
    if (!file) continue; // a server.json: nothing to remove
    if (file.scope === "user" && !opts.user) {
      let here = left.get(file.path);
      if (!here) left.set(file.path, here = []);
      here.push(s);
      continue;
    }
    let move = moves.get(file.path);
    if (!move) moves.set(file.path, move = { file, removals: [], servers: [] });
    move.servers.push(s);
    // A file holds one or two server objects (~/.claude.json: this project's and the top level).
    const key = JSON.stringify(file.at);
    let removal = move.removals.find((r) => JSON.stringify(r.at) === key);
    if (!removal) move.removals.push(removal = { at: file.at, names: [], env: {} });
    removal.names.push(s.entry.name);
    Object.assign(removal.env, s.values);
  }
  return { moves: [...moves.values()], left };
}
