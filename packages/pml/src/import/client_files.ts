/**
 * Where each agent keeps its MCP servers, and how `pml import` reads them and, with `--move`,
 * removes them (the old file kept as `<file>.backup`). Project files first, then the user's own.
 * What a project file holds, and this project's entry of `~/.claude.json`, belongs to the workspace
 * (`scope: "project"`); the rest of the user's files serves every project of that user
 * (`scope: "user"`), so `--move` leaves it in place unless `--move-user` says otherwise.
 *
 * | client   | project                 | user                                                   |
 * | -------- | ----------------------- | ------------------------------------------------------ |
 * | claude   | `.mcp.json`             | `~/.claude.json` (this project's entry, then top level) |
 * | cursor   | `.cursor/mcp.json`      | `~/.cursor/mcp.json`                                   |
 * | vscode   | `.vscode/mcp.json`      |                                                        |
 * | gemini   | `.gemini/settings.json` | `~/.gemini/settings.json`                              |
 * | qwen     | `.qwen/settings.json`   | `~/.qwen/settings.json`                                |
 * | codex    | `.codex/config.toml`    | `~/.codex/config.toml`                                 |
 * | opencode | `opencode.json`         | `~/.config/opencode/opencode.json`                     |
 *
 * @module
 */
import { join } from "node:path";
import { PmlError } from "../errors.ts";
import { parseToml } from "./toml.ts";
import { writeFileAtomic } from "../config/write_json.ts";
import { type ClientName, CLIENTS } from "../cli/client_configs.ts";
import {
  type ClientEntry,
  codexEntry,
  jsonEntry,
  objectOf,
  opencodeEntry,
} from "./client_entry.ts";

/**
 * The clients `pml import --from` knows: the ones `pml init` writes for (one list, so a client added
 * to `pml init` does not type-check until import reads its file too).
 */
export const IMPORT_CLIENTS = CLIENTS;
export type ImportClient = ClientName;

/** One configuration file and where its servers live in it. */
export interface ClientFile {
  readonly client: ImportClient;
  readonly path: string;
  readonly format: "json" | "toml";
  /** The keys leading to the servers' object (`["mcpServers"]`, `["projects", ws, "mcpServers"]`). */
  readonly at: readonly string[];
  /**
   * `project`: the workspace's own (its files, its entry of `~/.claude.json`); `user`: the user's
   * configuration, which every other project of that user reads too.
   */
  readonly scope: "project" | "user";
}

/** Where a file given by path belongs: the workspace's when it lies inside it, else the user's. */
export function scopeOfPath(path: string, workspace: string): ClientFile["scope"] {
  return path.startsWith(workspace + "/") ? "project" : "user";
}

type Reader = typeof jsonEntry;

const READERS: Record<ImportClient, Reader> = {
  claude: jsonEntry,
  cursor: jsonEntry,
  vscode: jsonEntry,
  gemini: jsonEntry,
  qwen: jsonEntry,
  codex: codexEntry,
  opencode: opencodeEntry,
};

/** The files of `client`, project first (absent files included: reading one gives nothing). */
export function clientFiles(
  client: ImportClient,
  where: { workspace: string; home?: string },
): ClientFile[] {
  const ws = where.workspace;
  const home = where.home;
  const f = (path: string, at: string[], format: "json" | "toml" = "json"): ClientFile => ({
    client,
    path,
    format,
    at,
    scope: scopeOfPath(path, ws),
  });
  const user = (...parts: string[]) => (home ? [join(home, ...parts)] : []);
  switch (client) {
    case "claude":
      return [
        f(join(ws, ".mcp.json"), ["mcpServers"]),
        ...user(".claude.json").flatMap((p) => [
          { ...f(p, ["projects", ws, "mcpServers"]), scope: "project" as const },
          f(p, ["mcpServers"]),
        ]),
      ];
    case "cursor":
      return [join(ws, ".cursor", "mcp.json"), ...user(".cursor", "mcp.json")].map((p) =>
        f(p, ["mcpServers"])
      );
    case "vscode":
      return [f(join(ws, ".vscode", "mcp.json"), ["servers"])];
    case "gemini":
    case "qwen":
      return [
        join(ws, `.${client}`, "settings.json"),
        ...user(`.${client}`, "settings.json"),
      ].map((p) => f(p, ["mcpServers"]));
    case "codex":
      return [join(ws, ".codex", "config.toml"), ...user(".codex", "config.toml")].map((p) =>
        f(p, ["mcp_servers"], "toml")
      );
    case "opencode":
      return [join(ws, "opencode.json"), ...user(".config", "opencode", "opencode.json")].map((
        p,
      ) => f(p, ["mcp"]));
  }
}

/** The parsed document of a file; `undefined` when it does not exist. */
async function readDocument(
  file: Pick<ClientFile, "path" | "format">,
): Promise<Record<string, unknown> | undefined> {
  let text: string;
  try {
    text = await Deno.readTextFile(file.path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return undefined;
    throw new PmlError("IMPORT_FAILED", `Cannot read ${file.path}: ${(err as Error).message}`);
  }
  try {
    const doc = file.format === "toml" ? await parseToml(text) : JSON.parse(text);
    const obj = objectOf(doc);
    if (!obj) throw new TypeError("it does not hold an object");
    return obj;
  } catch (err) {
    throw new PmlError(
      "IMPORT_FAILED",
      `Cannot read ${file.path}: not valid ${file.format === "toml" ? "TOML" : "JSON"} (${
        (err as Error).message
      })`,
    );
  }
}

function dig(doc: Record<string, unknown>, at: readonly string[]): Record<string, unknown> {
  let node: unknown = doc;
  for (const key of at) node = objectOf(node)?.[key];
  return objectOf(node) ?? {};
}

/** The servers of one file, as {@link ClientEntry}s (entries that are neither skipped). */
export async function readClientFile(file: ClientFile): Promise<ClientEntry[]> {
  const doc = await readDocument(file);
  if (!doc) return [];
  const read = READERS[file.client];
  const out: ClientEntry[] = [];
  for (const [name, raw] of Object.entries(dig(doc, file.at))) {
    const entry = read(name, raw, { file: file.path, client: file.client });
    if (entry) out.push(entry);
  }
  return out;
}

/** Servers to remove from one object of a file, and the values the client gave them. */
export interface Removal {
  /** The keys leading to the servers' object ({@link ClientFile.at}). */
  readonly at: readonly string[];
  readonly names: readonly string[];
  /** Variables (name → value) the client gave these servers. */
  readonly env: Readonly<Record<string, string>>;
}

/**
 * Removes servers from one file (`pml import --move`), every object of it at once: the file is read
 * once, saved once as `<file>.backup` (the original), and written once; every other key is kept.
 * In a JSON object whose `pml` entry sits beside the removed servers, their `env` is merged into
 * that entry's `env`, so the client still hands the values to PML. Returns the names of the
 * variables that went there.
 */
export async function removeFromClientFile(
  file: Pick<ClientFile, "path" | "format">,
  removals: readonly Removal[],
): Promise<{ envMoved: Set<string> }> {
  const text = await Deno.readTextFile(file.path);
  await Deno.copyFile(file.path, `${file.path}.backup`);
  const envMoved = new Set<string>();
  if (file.format === "toml") {
    let next = text;
    for (const r of removals) next = withoutTomlTables(next, r.at[0], r.names);
    await writeFileAtomic(file.path, next);
    return { envMoved };
  }
  const doc = JSON.parse(text);
  for (const r of removals) {
    const servers = dig(doc, r.at);
    for (const name of r.names) delete servers[name];
    const pml = objectOf(servers.pml);
    if (pml && Object.keys(r.env).length) {
      pml.env = { ...(objectOf(pml.env) ?? {}), ...r.env };
      for (const k of Object.keys(r.env)) envMoved.add(k);
    }
  }
  await writeFileAtomic(file.path, JSON.stringify(doc, null, 2) + "\n");
  return { envMoved };
}

/**
 * `text` (TOML) without the tables `[<key>.<name>]` and their sub-tables (`[<key>.<name>.env]`),
 * names bare or quoted. Comments and other tables are kept as written.
 */
export function withoutTomlTables(text: string, key: string, names: readonly string[]): string {
  const lines = text.split("\n");
  const out: string[] = [];
  let skipping = false;
  for (const line of lines) {
    const header = /^\s*\[\s*([^\]]+?)\s*\]\s*(#.*)?$/.exec(line);
    if (header) {
      const parts = tableKey(header[1]);
      skipping = parts[0] === key && parts.length >= 2 && names.includes(parts[1]);
    }
    if (!skipping) out.push(line);
  }
  return out.join("\n").replace(/\n{3,}/g, "\n\n");
}

/** The keys of a TOML table header (`mcp_servers."my server".env` → three keys). */
function tableKey(header: string): string[] {
  const keys: string[] = [];
  const re = /\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+))\s*(?:\.|$)/gy;
  let m: RegExpExecArray | null;
  while ((m = re.exec(header)) !== null && m[0] !== "") {
    keys.push(m[1] !== undefined ? JSON.parse(`"${m[1]}"`) : m[2] ?? m[3]);
  }
  return keys;
}
