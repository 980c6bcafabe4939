import { dirname, join } from "node:path";
import { CONFIG_FILE } from "../config/config.ts";
import { trustContent } from "../config/trust_store.ts";
import { saveApiKey } from "../config/credentials.ts";
import { DEFAULT_CLOUD_URL, DEFAULT_PERMISSIONS, DEFAULT_PORT } from "../config/defaults.ts";
import { readJsonObject, writeFileAtomic } from "../config/write_json.ts";
import { pmlSchemas } from "../config/schema.ts";
import { type ResolvedWorkspace, resolveWorkspace } from "../config/workspace.ts";
import { PmlError } from "../errors.ts";
import { checkPermission } from "../permission/patterns.ts";
import type { CliIo } from "./io.ts";
import { clientServers } from "../import/find_servers.ts";
import { runImport } from "./import.ts";
import { clientCommand } from "./client_command.ts";
import { ignorePmlFolder } from "./git_ignore.ts";
import {
  type ClientName,
  codexToml,
  type EntryInput,
  type JsonClientConfig,
  jsonClientConfig,
  trustNote,
  withCodexTable,
} from "./client_configs.ts";

/** Options of `pml init`. */
export interface InitOptions {
  readonly yes: boolean;
  readonly apiKey?: string;
  readonly cloudUrl?: string;
  readonly transport: "stdio" | "http";
  readonly port?: number;
  /**
   * How this `pml` was started (`PML_LAUNCHER`: the launcher's absolute path, or `pml`). The client
   * files name `pml` when the PATH finds one, this path only when it does not
   * ({@link clientCommand}).
   */
  readonly launcher: string;
  /** The clients whose config files to write (default: Claude Code's `.mcp.json`). */
  readonly clients?: readonly ClientName[];
  /** `--workspace DIR` (spike, option B): the folder to set up; wins over `PML_WORKSPACE`. */
  readonly workspace?: string;
}

/** BYOK variables offered to cloud tools by default (names only; values stay in the environment). */
export const DEFAULT_BYOK_ENV = [
  "TAVILY_API_KEY",
  "EXA_API_KEY",
  "GITHUB_TOKEN",
  "SLACK_BOT_TOKEN",
];

/** Server namespaces that only compute (no side effects, no keys): allowed when cloud mode is set up. */
export const PURE_SERVER_TOOLS = ["json", "math", "text", "pml:search"] as const;

/**
 * The patterns of `wanted` (namespaces or tool ids) that the `permissions` of an existing
 * `.pml.json` ask for (built-in defaults when it has none; a deny is the user's choice). None when
 * the field is invalid: loading the file says so.
 */
function askedOf(permissions: unknown, wanted: readonly string[]): string[] {
  const parsed = pmlSchemas().PermissionsSchema.safeParse(permissions ?? DEFAULT_PERMISSIONS);
  if (!parsed.success) return [];
  // A namespace stands for its tools: `json` is checked as `json:<any action>`.
  const id = (w: string) => w.includes(":") ? w : `${w}:any`;
  return wanted.filter((w) => checkPermission(id(w), parsed.data) === "ask");
}

async function ask(io: CliIo, question: string): Promise<string> {
  return ((await io.prompt?.(question)) ?? "").trim();
}

/** The workspace `pml init` sets up: `--workspace DIR` (an existing folder), else as `pml` finds it. */
function initWorkspace(dir: string | undefined, io: CliIo): ResolvedWorkspace {
  if (dir === undefined) return resolveWorkspace({ env: io.env, cwd: io.cwd });
  try {
    return resolveWorkspace({ env: { PML_WORKSPACE: dir }, cwd: io.cwd });
  } catch (err) {
    throw new TypeError((err as Error).message.replace("PML_WORKSPACE", "--workspace"));
  }
}

/**
 * `pml init`: writes `.pml.json` (kept if it exists), adds PML to `.mcp.json` (other servers
 * kept, the old file saved as `.mcp.json.backup`) and `.pml/` to `.gitignore`. Safe to re-run:
 * unchanged files are not touched.
 */
export async function runInit(opts: InitOptions, io: CliIo): Promise<number> {
  const ws = initWorkspace(opts.workspace, io);
  if (ws.warning) io.stderr(ws.warning + "\n");
  const interactive = io.isTerminal && !opts.yes && io.prompt !== undefined;
  const pmlHome = io.env.PML_HOME || join(io.home ?? ws.path, ".pml");

  let apiKey = opts.apiKey;
  if (apiKey === undefined && interactive && !io.env.PML_API_KEY) {
    apiKey = await ask(io, "PML API key (Enter to skip: local-only mode):") || undefined;
  }

  const configPath = join(ws.path, CONFIG_FILE);
  const existing = await readJsonObject(configPath).catch((err) => {
    throw new PmlError("CONFIG_INVALID", `Cannot update ${configPath}: ${(err as Error).message}`);
  });
  let port = opts.port ?? DEFAULT_PORT;
  if (existing) {
    if (typeof existing.port === "number" && opts.port === undefined) port = existing.port;
    io.stdout(`Kept ${configPath} (it exists already)\n`);
    io.stdout(`  If it came with the folder, review it; \`pml trust\` applies what it widens\n`);
    if (apiKey) {
      const asked = askedOf(existing.permissions, PURE_SERVER_TOOLS);
      if (asked.length) {
        io.stdout(
          `Its permissions ask before every use of the server tools ${
            asked.join(", ")
          }; add them to "permissions.allow" to allow them\n`,
        );
      }
    }
  } else {
    const file = {
      workspace: ".",
      cloudUrl: opts.cloudUrl ?? DEFAULT_CLOUD_URL,
      ...(opts.transport === "http" ? { port } : {}),
      permissions: {
        // With a key, the server's pure tools are allowed; HTTP API MCPs stay unmatched (asked).
        allow: [...DEFAULT_PERMISSIONS.allow, ...(apiKey ? PURE_SERVER_TOOLS : [])],
        ask: [...DEFAULT_PERMISSIONS.ask],
        deny: [...DEFAULT_PERMISSIONS.deny],
      },
      env: DEFAULT_BYOK_ENV,
    };
    const text = JSON.stringify(file, null, 2) + "\n";
    await writeFileAtomic(configPath, text);
    // pml wrote it on the human's command: trusted as written (DESIGN §13 "Workspace trust").
    await trustContent(pmlHome, ws.path, text);
    io.stdout(`Wrote ${configPath} (trusted as written)\n`);
  }

  const byokEnv = existing
    ? (Array.isArray(existing.env) ? existing.env.filter((v) => typeof v === "string") : [])
    : DEFAULT_BYOK_ENV;
  const { command, note: commandNote } = clientCommand(opts.launcher, io.env.PATH);
  const input: EntryInput = { transport: opts.transport, command, port, byokEnv };
  for (const client of opts.clients ?? ["claude"]) {
    if (client === "codex") {
      await writeCodex(ws.path, input, io, interactive);
    } else {
      await writeJsonConfig(ws.path, jsonClientConfig(client, input), io, interactive);
    }
    const note = trustNote(client);
    if (note) io.stdout(`  ${note}\n`);
  }
  if (commandNote && opts.transport === "stdio") io.stdout(`${commandNote}\n`);
  const ignored = await ignorePmlFolder(ws.path);
  if (ignored) {
    io.stdout(
      `Added .pml/ to ${ignored} (the audit log, approvals and installed servers stay out of git)\n`,
    );
  }
  if (opts.transport === "http") {
    io.stdout(
      `Start the gateway yourself before the client connects: pml serve (in ${ws.path}; it serves the folder where it runs)\n`,
    );
  }

  if (apiKey) {
    const where = await saveApiKey(pmlHome, apiKey);
    io.stdout(
      `Stored the API key in ${where} (mode 600); PML_API_KEY in the environment overrides it\n`,
    );
  } else if (!io.env.PML_API_KEY) {
    io.stdout("No API key: local-only mode (cloud tools need PML_API_KEY)\n");
  }
  io.stdout(`Workspace: ${ws.path}\n`);
  return await offerImport(ws.path, io, interactive);
}

/**
 * When the agents' configurations hold MCP servers of their own, offers to bring them behind PML
 * (`pml import`, which shows each one and asks again before writing). Without a terminal: says how.
 */
async function offerImport(workspace: string, io: CliIo, interactive: boolean): Promise<number> {
  const found = await clientServers({ workspace, home: io.home });
  if (!found.length) return 0;
  const names = [...new Set(found.map((e) => e.name))];
  const shown = names.slice(0, 20).join(", ") + (names.length > 20 ? ", …" : "");
  io.stdout(`Your agents run ${names.length} MCP server(s) of their own: ${shown}\n`);
  if (!interactive) {
    io.stdout("Run `pml import` to bring them behind PML (pinned, sandboxed, asked)\n");
    return 0;
  }
  if (!/^y(es)?$/i.test(await ask(io, "Review and import them into PML now? [y/N]"))) {
    io.stdout("Later: `pml import`\n");
    return 0;
  }
  return await runImport({ yes: false, move: false }, io);
}

/** Adds pml's entry to one client's JSON config, keeping everything else; asks before changing. */
async function writeJsonConfig(
  workspace: string,
  config: JsonClientConfig,
  io: CliIo,
  interactive: boolean,
): Promise<void> {
  const path = join(workspace, config.file);
  const current = await readJsonObject(path).catch((err) => {
    throw new PmlError("CONFIG_INVALID", `Cannot update ${path}: ${(err as Error).message}`);
  });
  const servers = (current?.[config.key] ?? {}) as Record<string, unknown>;
  if (JSON.stringify(servers.pml) === JSON.stringify(config.entry)) {
    io.stdout(`Kept ${path} (PML is already configured)\n`);
    return;
  }
  if (current && interactive) {
    if (!/^y(es)?$/i.test(await ask(io, `Add PML to the existing ${path}? [y/N]`))) {
      io.stdout(`Left ${path} unchanged\n`);
      return;
    }
  }
  if (current) {
    await Deno.copyFile(path, `${path}.backup`);
    io.stdout(`Saved the previous file as ${path}.backup\n`);
  }
  await Deno.mkdir(dirname(path), { recursive: true });
  const next = { ...(current ?? {}), [config.key]: { ...servers, pml: config.entry } };
  await writeFileAtomic(path, JSON.stringify(next, null, 2) + "\n");
  io.stdout(`Wrote ${path} (${config.client})\n`);
}

/**
 * Codex: writes `[mcp_servers.pml]` into the project's `.codex/config.toml` (other tables kept) and
 * prints the table for `~/.codex/config.toml`, where Codex reads it outside trusted projects.
 */
async function writeCodex(
  workspace: string,
  input: EntryInput,
  io: CliIo,
  interactive: boolean,
): Promise<void> {
  const path = join(workspace, ".codex", "config.toml");
  const table = codexToml(input);
  let current = "";
  try {
    current = await Deno.readTextFile(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const next = withCodexTable(current, table);
  if (next === current) {
    io.stdout(`Kept ${path} (PML is already configured)\n`);
  } else if (
    current && interactive &&
    !/^y(es)?$/i.test(await ask(io, `Add PML to the existing ${path}? [y/N]`))
  ) {
    io.stdout(`Left ${path} unchanged\n`);
  } else {
    if (current) {
      await Deno.copyFile(path, `${path}.backup`);
      io.stdout(`Saved the previous file as ${path}.backup\n`);
    }
    await Deno.mkdir(dirname(path), { recursive: true });
    await writeFileAtomic(path, next);
    io.stdout(`Wrote ${path} (codex)\n`);
  }
  io.stdout(`For Codex outside this project, add to ~/.codex/config.toml:\n\n${table}\n`);
}
