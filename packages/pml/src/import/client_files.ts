/**
 * Where each agent keeps its MCP servers, and how `pml import` reads them and, with `--move`,
 * removes them (the old file kept as `<file>.backup`). Project files first, then the user's own.
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
  });
  const user = (...parts: string[]) => (home ? [join(home, ...parts)] : []);
  switch (client) {
    case "claude":
      return [
        f(join(ws, ".mcp.json"), ["mcpServers"]),
        ...user(".claude.json").flatMap((p) => [
          f(p, ["projects", ws, "mcpServers"]),
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

/**
 * Removes the servers `names` from `file` (`pml import --move`): the old file is saved as
 * `<file>.backup`, every other key is kept. In a JSON file whose `pml` entry sits beside them,
 * `env` (the values the client gave the moved servers) is merged into that entry's `env`, so the
 * client still hands them to PML. Returns whether `env` went there.
 */
export async function removeFromClientFile(
  file: ClientFile,
  names: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<{ envMoved: boolean }> {
  const text = await Deno.readTextFile(file.path);
  await Deno.copyFile(file.path, `${file.path}.backup`);
  if (file.format === "toml") {
    await writeFileAtomic(file.path, withoutTomlTables(text, file.at[0], names));
    return { envMoved: false };
  }
  const doc = JSON.parse(text);
  const servers = dig(doc, file.at);
  for (const name of names) delete servers[name];
  const pml = objectOf(servers.pml);
  const envMoved = pml !== undefined && Object.keys(env).length > 0;
  if (pml && envMoved) pml.env = { ...(objectOf(pml.env) ?? {}), ...env };
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
