/**
 * The `pml` entry of each MCP client's own config file, in that client's syntax (`pml init
 * --client`). Measured with the real clients (docs/clients.md):
 *
 * - Claude Code reads `.mcp.json` (`mcpServers`), starts project servers in the project folder and
 *   expands `${VAR}` from its environment, warning about unknown names: no `${workspaceFolder}`.
 * - Cursor reads `.cursor/mcp.json` (`mcpServers`) and expands `${workspaceFolder}`.
 * - VS Code reads `.vscode/mcp.json` (`servers`, each with a `type`) and expands
 *   `${workspaceFolder}`.
 * - Gemini CLI reads `.gemini/settings.json` (`mcpServers`; `httpUrl` for Streamable HTTP),
 *   keeps variables that look like secrets from MCP servers unless the entry's `env` names them,
 *   and in headless runs offers a server's tools only with `"trust": true` on its entry (or
 *   `--yolo`): the entry says it, and PML's own permissions decide.
 * - Codex reads TOML (`[mcp_servers.pml]`, `env_vars` to pass variables through).
 * - opencode reads `opencode.json` in the project (`mcp`, each entry `"type": "local"` with the
 *   command as one array, or `"type": "remote"` with a `url`) and starts local servers in the
 *   project folder with its own environment.
 * - Qwen Code reads `.qwen/settings.json` (`mcpServers`, Gemini CLI's syntax: `httpUrl` for
 *   Streamable HTTP) and asks before every MCP call unless the entry says `"trust": true`: PML's
 *   own permissions then decide, as they do for every other client. Its model sees no tool of a
 *   project's server until the user approves that server once (`qwen mcp approve pml`).
 *
 * @module
 */

/** The clients `pml init --client` knows. */
export const CLIENTS = [
  "claude",
  "cursor",
  "vscode",
  "gemini",
  "codex",
  "opencode",
  "qwen",
] as const;
export type ClientName = typeof CLIENTS[number];

/** What every entry is made from. */
export interface EntryInput {
  readonly transport: "stdio" | "http";
  /** The command that runs `pml`. */
  readonly command: string;
  readonly port: number;
  /** Names of the BYOK variables `.pml.json` lets cloud tools receive. */
  readonly byokEnv: readonly string[];
}

/** A JSON config file: where it is, under which key its servers live, and pml's entry. */
export interface JsonClientConfig {
  readonly client: Exclude<ClientName, "codex">;
  /** Relative to the workspace. */
  readonly file: string;
  readonly key: "mcpServers" | "servers" | "mcp";
  readonly entry: Record<string, unknown>;
}

const url = (port: number) => `http://127.0.0.1:${port}/mcp`;

/** The JSON config of `client` (every client but Codex). */
export function jsonClientConfig(
  client: Exclude<ClientName, "codex">,
  input: EntryInput,
): JsonClientConfig {
  const http = input.transport === "http";
  const stdio = { command: input.command, args: ["stdio"] };
  switch (client) {
    case "claude":
      return {
        client,
        file: ".mcp.json",
        key: "mcpServers",
        entry: http ? { type: "http", url: url(input.port) } : { type: "stdio", ...stdio },
      };
    case "cursor":
      return {
        client,
        file: ".cursor/mcp.json",
        key: "mcpServers",
        entry: http
          ? { url: url(input.port) }
          : { ...stdio, env: { PML_WORKSPACE: "${workspaceFolder}" } },
      };
    case "vscode":
      return {
        client,
        file: ".vscode/mcp.json",
        key: "servers",
        entry: http ? { type: "http", url: url(input.port) } : {
          type: "stdio",
          ...stdio,
          env: { PML_WORKSPACE: "${workspaceFolder}" },
        },
      };
    case "gemini":
      return {
        client,
        file: ".gemini/settings.json",
        key: "mcpServers",
        entry: http ? { httpUrl: url(input.port), trust: true } : {
          ...stdio,
          ...(input.byokEnv.length ? { env: passThrough(input, (v) => `\${${v}}`) } : {}),
          trust: true,
        },
      };
    case "opencode":
      return {
        client,
        file: "opencode.json",
        key: "mcp",
        entry: http
          ? { type: "remote", url: url(input.port), enabled: true }
          : { type: "local", command: [input.command, "stdio"], enabled: true },
      };
    case "qwen":
      return {
        client,
        file: ".qwen/settings.json",
        key: "mcpServers",
        entry: http ? { httpUrl: url(input.port), trust: true } : { ...stdio, trust: true },
      };
  }
}

/**
 * What a client needs beyond its entry before PML's tools reach the model, printed by `pml init`
 * (docs/clients.md has the measurements behind each line).
 */
export function trustNote(client: ClientName): string | undefined {
  switch (client) {
    case "claude":
      return "Claude Code: approve the project's pml server once in an interactive claude " +
        "session; headless runs need --allowedTools mcp__pml (PML's .pml.json then decides)";
    case "codex":
      return "Codex: the project's .codex/config.toml is read only in a trusted project " +
        '([projects."<dir>"] trust_level = "trusted" in ~/.codex/config.toml)';
    case "gemini":
      return 'Gemini CLI: the entry says "trust": true, so headless runs offer PML\'s tools ' +
        "without --yolo and PML's .pml.json decides allow, ask and deny; headless runs read the " +
        "project's settings only with GEMINI_CLI_TRUST_WORKSPACE=true (or --skip-trust)";
    case "opencode":
      return 'opencode: runs MCP tools without asking unless its "permission" says otherwise; ' +
        'a rule "pml_*": "allow" there keeps every PML tool to PML\'s own .pml.json';
    case "qwen":
      return "Qwen Code: run `qwen mcp approve pml` once in this project: until then Qwen shows " +
        'its model none of PML\'s tools. The entry says "trust": true, so Qwen does not ask ' +
        "before PML's tools and PML's .pml.json decides allow, ask and deny (shell, writes and " +
        "installs still wait for you); remove it to have Qwen ask as well";
    default:
      return undefined;
  }
}

function passThrough(input: EntryInput, form: (name: string) => string): Record<string, string> {
  return Object.fromEntries(input.byokEnv.map((v) => [v, form(v)]));
}

function tomlString(value: string): string {
  return JSON.stringify(value); // a TOML basic string is a JSON string for these characters
}

/**
 * Codex's `[mcp_servers.pml]` table, as TOML text. `required = true`: since 0.147 Codex gives an
 * optional server about one second to start and then runs the turn without its tools, silently; a
 * required one is waited for (up to its startup timeout) and a failure to start is reported.
 */
export function codexToml(input: EntryInput): string {
  const lines = ["[mcp_servers.pml]", "required = true"];
  if (input.transport === "http") {
    lines.push(`url = ${tomlString(url(input.port))}`);
  } else {
    lines.push(`command = ${tomlString(input.command)}`, `args = ["stdio"]`);
    if (input.byokEnv.length) {
      lines.push(`env_vars = [${input.byokEnv.map(tomlString).join(", ")}]`);
    }
  }
  return lines.join("\n") + "\n";
}

/**
 * `text` (a Codex config.toml, possibly empty) with its `[mcp_servers.pml]` table replaced by
 * `table` (or appended). Other tables and comments are kept as they are.
 */
export function withCodexTable(text: string, table: string): string {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => /^\s*\[mcp_servers\.pml\]\s*(#.*)?$/.test(l));
  if (start < 0) {
    const base = text.trimEnd();
    return (base ? base + "\n\n" : "") + table;
  }
  let end = start + 1;
  while (end < lines.length && !/^\s*\[/.test(lines[end])) end++;
  const before = lines.slice(0, start).join("\n").trimEnd();
  const after = lines.slice(end).join("\n").trim();
  return [before, table.trimEnd(), after].filter(Boolean).join("\n\n") + "\n";
}

/** Parses `--client` values (repeatable, comma-separated) into client names, default `claude`. */
export function parseClients(values: readonly string[] | undefined): ClientName[] {
  const names = (values ?? []).flatMap((v) => v.split(",")).map((v) => v.trim()).filter(Boolean);
  if (names.length === 0) return ["claude"];
  const out: ClientName[] = [];
  for (const name of names) {
    const expanded = name === "all" ? [...CLIENTS] : [name];
    for (const n of expanded) {
      if (!(CLIENTS as readonly string[]).includes(n)) {
        throw new TypeError(
          `--client must be one of ${CLIENTS.join(", ")} or all (comma-separated), not "${n}"`,
        );
      }
      if (!out.includes(n as ClientName)) out.push(n as ClientName);
    }
  }
  return out;
}
