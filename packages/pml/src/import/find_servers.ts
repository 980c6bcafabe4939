/**
 * What `pml import` brings over: the servers of the agents' configuration files (one client, every
 * client, or one file given by path, a `server.json` included), minus PML's own entry, converted
 * into `private_mcps` definitions.
 *
 * @module
 */
import { resolve } from "node:path";
import { errorMessage, PmlError } from "../errors.ts";
import type { NpmResolver } from "../deps/npm_resolver.ts";
import { MAX_PRIVATE_MCPS } from "../config/defaults.ts";
import { type ClientEntry, isPmlEntry, objectOf } from "./client_entry.ts";
import {
  type ClientFile,
  clientFiles,
  IMPORT_CLIENTS,
  type ImportClient,
  readClientFile,
  scopeOfPath,
} from "./client_files.ts";
import { isServerJson, parseServerJson, serverJsonEntry } from "./server_json.ts";
import { parseToml } from "./toml.ts";
import { type ImportedServer, namespaceOf, toPrivateMcp } from "./to_private_mcp.ts";

/** At most this many servers per `pml import` (docs/import.md "Limits"). */
export const MAX_IMPORT_SERVERS = 100;

/** Where to look: a client's files, every client's, or one file. */
export type ImportFrom = { readonly client: ImportClient } | { readonly path: string } | undefined;

/** What was found, with what was left aside and why. */
export interface FoundServers {
  readonly servers: ImportedServer[];
  /** The file (and object in it) each server came from, for `--move`; none for a server.json. */
  readonly sources: ReadonlyMap<ImportedServer, ClientFile>;
  /** Entries left aside: PML's own, disabled, already in `.pml.json`, failed to resolve. */
  readonly skipped: {
    readonly entry: ClientEntry;
    readonly reason: string;
    /** Set when it could not be converted (its package did not resolve): not a choice. */
    readonly failed?: boolean;
  }[];
  /** Inputs a `server.json` leaves open. */
  readonly missing: string[];
}

/** The client a file given by path belongs to, from its name and content. */
function clientOfPath(path: string, doc: Record<string, unknown>): ImportClient {
  if (path.endsWith(".toml")) return "codex";
  if (objectOf(doc.servers)) return "vscode";
  if (objectOf(doc.mcp)) return "opencode";
  if (path.includes(`.gemini`)) return "gemini";
  if (path.includes(`.qwen`)) return "qwen";
  if (path.includes(`.cursor`)) return "cursor";
  return "claude";
}

async function entriesOfPath(
  path: string,
  workspace: string,
): Promise<{ entries: ClientEntry[]; file?: ClientFile; missing: string[] }> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    throw new PmlError("IMPORT_FAILED", `Cannot read ${path}: ${errorMessage(err)}`);
  }
  let doc: Record<string, unknown> | undefined;
  try {
    doc = objectOf(path.endsWith(".toml") ? await parseToml(text) : JSON.parse(text));
  } catch (err) {
    throw new PmlError("IMPORT_FAILED", `Cannot read ${path}: ${errorMessage(err)}`);
  }
  if (!doc) throw new PmlError("IMPORT_FAILED", `Cannot read ${path}: it holds no object`);
  if (isServerJson(doc)) {
    const { entry, missing } = serverJsonEntry(parseServerJson(doc, path), path);
    return { entries: [entry], missing };
  }
  const client = clientOfPath(path, doc);
  const at = client === "codex"
    ? ["mcp_servers"]
    : client === "vscode"
    ? ["servers"]
    : client === "opencode"
    ? ["mcp"]
    : ["mcpServers"];
  const file: ClientFile = {
    client,
    path,
    format: client === "codex" ? "toml" : "json",
    at,
    scope: scopeOfPath(path, workspace),
  };
  const entries = await readClientFile(file);
  if (!entries.length) {
    throw new PmlError(
      "IMPORT_FAILED",
      `${path} holds no MCP server PML can read (looked for "${at.join(".")}" as ${client} ` +
        `writes it, and for a server.json with "packages" or "remotes")`,
    );
  }
  return { entries, file, missing: [] };
}

/**
 * Finds the servers to import. `existing`: namespaces `.pml.json` defines already (kept, not
 * imported again); `reserved`: namespaces of PML's own tools (an entry of that name is renamed).
 */
export async function findServers(
  from: ImportFrom,
  ctx: {
    workspace: string;
    home?: string;
    cwd: string;
    resolver: NpmResolver;
    existing: ReadonlySet<string>;
    reserved: ReadonlySet<string>;
  },
): Promise<FoundServers> {
  const found: { entry: ClientEntry; file?: ClientFile }[] = [];
  const missing: string[] = [];
  if (from && "path" in from) {
    const r = await entriesOfPath(resolve(ctx.cwd, from.path), ctx.workspace);
    for (const entry of r.entries) found.push({ entry, file: r.file });
    missing.push(...r.missing);
  } else {
    for (const client of from ? [from.client] : IMPORT_CLIENTS) {
      for (const file of clientFiles(client, ctx)) {
        for (const entry of await readClientFile(file)) found.push({ entry, file });
      }
    }
  }
  const sources = new Map<ImportedServer, ClientFile>();
  const skipped: FoundServers["skipped"] = [];
  const names = new Set<string>();
  const candidates: typeof found = [];
  for (const { entry, file } of found) {
    if (isPmlEntry(entry)) {
      skipped.push({ entry, reason: "PML's own entry" });
      continue;
    }
    if (entry.disabled) {
      skipped.push({ entry, reason: "disabled in the client" });
      continue;
    }
    if (ctx.existing.has(entry.name)) {
      skipped.push({ entry, reason: `"${entry.name}" is in .pml.json already (kept as it is)` });
      continue;
    }
    if (names.has(entry.name)) {
      skipped.push({ entry, reason: `a server named "${entry.name}" was found first elsewhere` });
      continue;
    }
    names.add(entry.name);
    candidates.push({ entry, file });
  }
  // Bounded before anything is resolved, installed or shown (each server costs a set-up).
  checkImportLimits(candidates.length, ctx.existing.size);
  const servers: ImportedServer[] = [];
  const taken = new Set([...ctx.reserved, ...ctx.existing]);
  for (const { entry, file } of candidates) {
    const ns = namespaceOf(entry.name, taken);
    try {
      const server = await toPrivateMcp(entry, ns, {
        resolver: ctx.resolver,
        workspace: ctx.workspace,
      });
      taken.add(ns);
      servers.push(server);
      if (file) sources.set(server, file);
    } catch (err) {
      skipped.push({ entry, reason: errorMessage(err), failed: true });
    }
  }
  return { servers, sources, skipped, missing };
}

/**
 * Refuses an import past {@link MAX_IMPORT_SERVERS} servers, or one that would leave `.pml.json`
 * with more than {@link MAX_PRIVATE_MCPS} `private_mcps`: nothing is written.
 */
export function checkImportLimits(count: number, existing: number): void {
  if (count > MAX_IMPORT_SERVERS) {
    throw new PmlError(
      "IMPORT_TOO_MANY",
      `Found ${count} MCP servers to import; pml import brings at most ${MAX_IMPORT_SERVERS} at ` +
        `a time (each one is pinned, installed and started once): import one client ` +
        `(--from CLIENT) or one file (--from PATH) at a time. Nothing was written`,
    );
  }
  if (existing + count > MAX_PRIVATE_MCPS) {
    throw new PmlError(
      "IMPORT_TOO_MANY",
      `.pml.json holds ${existing} private_mcps; ${count} more would pass the limit of ` +
        `${MAX_PRIVATE_MCPS} servers per .pml.json (room for ${
          Math.max(0, MAX_PRIVATE_MCPS - existing)
        }). Nothing was written`,
    );
  }
}

/** The servers every client's files hold (not PML's own, not disabled), unconverted: for `pml init`. */
export async function clientServers(
  ctx: { workspace: string; home?: string },
): Promise<ClientEntry[]> {
  const out: ClientEntry[] = [];
  for (const client of IMPORT_CLIENTS) {
    for (const file of clientFiles(client, ctx)) {
      const entries = await readClientFile(file).catch(() => []);
      out.push(...entries.filter((e) => !isPmlEntry(e) && !e.disabled));
    }
  }
  return out;
}

/** `path` shown relative to the workspace or home when inside them. */
export function shortPath(path: string, ctx: { workspace: string; home?: string }): string {
  if (path.startsWith(ctx.workspace + "/")) return path.slice(ctx.workspace.length + 1);
  if (ctx.home && path.startsWith(ctx.home + "/")) return `~/${path.slice(ctx.home.length + 1)}`;
  return path;
}
