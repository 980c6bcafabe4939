import { join } from "node:path";
import { CONFIG_FILE } from "../config/config.ts";
import { saveApiKey } from "../config/credentials.ts";
import { DEFAULT_CLOUD_URL, DEFAULT_PERMISSIONS, DEFAULT_PORT } from "../config/defaults.ts";
import { readJsonObject, writeFileAtomic } from "../config/write_json.ts";
import { resolveWorkspace } from "../config/workspace.ts";
import { PmlError } from "../errors.ts";
import type { CliIo } from "./io.ts";

/** Options of `pml init`. */
export interface InitOptions {
  readonly yes: boolean;
  readonly apiKey?: string;
  readonly cloudUrl?: string;
  readonly transport: "stdio" | "http";
  readonly port?: number;
  /** The command the MCP client runs (default: `pml` when on PATH, else this launcher's path). */
  readonly command: string;
}

/** BYOK variables offered to cloud tools by default (names only; values stay in the environment). */
export const DEFAULT_BYOK_ENV = [
  "TAVILY_API_KEY",
  "EXA_API_KEY",
  "GITHUB_TOKEN",
  "SLACK_BOT_TOKEN",
];

/** The `mcpServers.pml` entry of `.mcp.json`. The API key never appears in it, only `${PML_API_KEY}`. */
export function pmlServerEntry(opts: InitOptions, port: number): Record<string, unknown> {
  if (opts.transport === "http") return { type: "http", url: `http://127.0.0.1:${port}/mcp` };
  return {
    type: "stdio",
    command: opts.command,
    args: ["stdio"],
    env: { PML_WORKSPACE: "${workspaceFolder}" },
  };
}

async function ask(io: CliIo, question: string): Promise<string> {
  return ((await io.prompt?.(question)) ?? "").trim();
}

/**
 * `pml init`: writes `.pml.json` (kept if it exists) and adds PML to `.mcp.json` (other servers
 * kept, the old file saved as `.mcp.json.backup`). Safe to re-run: unchanged files are not touched.
 */
export async function runInit(opts: InitOptions, io: CliIo): Promise<number> {
  const ws = resolveWorkspace({ env: io.env, cwd: io.cwd });
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
  } else {
    const file = {
      workspace: ".",
      cloudUrl: opts.cloudUrl ?? DEFAULT_CLOUD_URL,
      ...(opts.transport === "http" ? { port } : {}),
      permissions: {
        allow: [...DEFAULT_PERMISSIONS.allow],
        ask: [...DEFAULT_PERMISSIONS.ask],
        deny: [...DEFAULT_PERMISSIONS.deny],
      },
      env: DEFAULT_BYOK_ENV,
    };
    await writeFileAtomic(configPath, JSON.stringify(file, null, 2) + "\n");
    io.stdout(`Wrote ${configPath}\n`);
  }

  const mcpPath = join(ws.path, ".mcp.json");
  const mcp = await readJsonObject(mcpPath).catch((err) => {
    throw new PmlError("CONFIG_INVALID", `Cannot update ${mcpPath}: ${(err as Error).message}`);
  });
  const entry = pmlServerEntry(opts, port);
  const servers = (mcp?.mcpServers ?? {}) as Record<string, unknown>;
  if (JSON.stringify(servers.pml) === JSON.stringify(entry)) {
    io.stdout(`Kept ${mcpPath} (PML is already configured)\n`);
  } else {
    let write = true;
    if (mcp && interactive) {
      write = /^y(es)?$/i.test(await ask(io, `Add PML to the existing ${mcpPath}? [y/N]`));
    }
    if (write) {
      if (mcp) {
        await Deno.copyFile(mcpPath, `${mcpPath}.backup`);
        io.stdout(`Saved the previous file as ${mcpPath}.backup\n`);
      }
      const next = { ...(mcp ?? {}), mcpServers: { ...servers, pml: entry } };
      await writeFileAtomic(mcpPath, JSON.stringify(next, null, 2) + "\n");
      io.stdout(`Wrote ${mcpPath}\n`);
    } else {
      io.stdout(`Left ${mcpPath} unchanged\n`);
    }
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
  return 0;
}
