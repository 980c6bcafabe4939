/**
 * One MCP server as an agent's configuration describes it, in a form common to every client
 * (Claude Code, Cursor, VS Code, Gemini CLI, Codex, opencode, Qwen Code) and to the MCP Registry's
 * `server.json`: a command with arguments and environment, or a remote URL with headers.
 *
 * Values of environment variables and headers are kept here only so that `pml import --move` can
 * carry them into the client's own `pml` entry; they are never written to `.pml.json`.
 *
 * @module
 */

/** A server found in a client's configuration file. */
export interface ClientEntry {
  /** The server's name in the client's file. */
  readonly name: string;
  /** Where it was found (absolute path), and the client that reads it. */
  readonly file: string;
  readonly client: string;
  readonly description?: string;
  /** stdio: the command and its arguments. */
  readonly command?: string;
  readonly args: readonly string[];
  /** Environment the client gives the server: name → value as written (may be `${VAR}`). */
  readonly env: Readonly<Record<string, string>>;
  /** Remote: the URL and how to speak to it. */
  readonly url?: string;
  readonly transport?: "streamable-http" | "sse";
  /** Remote headers: name → value as written (may hold `${VAR}`). */
  readonly headers: Readonly<Record<string, string>>;
  /** Remote headers whose value is an environment variable (Codex `env_http_headers`). */
  readonly headerEnv: Readonly<Record<string, string>>;
  /** Variables of `env` the server can do without (a `server.json` says which). */
  readonly optionalEnv?: readonly string[];
  /** Set when the client itself turns the server off (`disabled`, `enabled = false`). */
  readonly disabled?: boolean;
}

/** A JSON object or undefined. */
export function objectOf(value: unknown): Record<string, unknown> | undefined {
  return value && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v) => typeof v === "string") : [];
}

function stringRecord(value: unknown): Record<string, string> {
  const o = objectOf(value) ?? {};
  return Object.fromEntries(
    Object.entries(o).filter(([, v]) => typeof v === "string" || typeof v === "number").map((
      [k, v],
    ) => [k, String(v)]),
  );
}

type Base = Omit<ClientEntry, "command" | "args" | "url" | "transport">;

/** A command entry when there is a command, else a remote one when there is a URL. */
function entryOf(
  base: Base,
  run: { command?: unknown; args?: string[]; url?: unknown; sse?: boolean },
): ClientEntry | undefined {
  if (typeof run.command === "string" && run.command) {
    return { ...base, command: run.command, args: run.args ?? [] };
  }
  if (typeof run.url !== "string") return undefined;
  return { ...base, args: [], url: run.url, transport: run.sse ? "sse" : "streamable-http" };
}

/**
 * Reads the entry most clients write (`command`/`args`/`env`, or `url`/`httpUrl`/`serverUrl` with
 * `headers`; `type` of `stdio`, `http`, `streamable-http`, `sse`), from Claude Code, Cursor, VS
 * Code, Gemini CLI and Qwen Code alike. `undefined` when it is neither a command nor a URL.
 */
export function jsonEntry(
  name: string,
  raw: unknown,
  where: { file: string; client: string },
): ClientEntry | undefined {
  const o = objectOf(raw);
  if (!o) return undefined;
  const type = typeof o.type === "string" ? o.type : undefined;
  const url = [o.url, o.httpUrl, o.serverUrl].find((u) => typeof u === "string") as
    | string
    | undefined;
  const base = {
    name,
    ...where,
    description: typeof o.description === "string" ? o.description : undefined,
    env: stringRecord(o.env),
    headers: stringRecord(o.headers),
    headerEnv: {},
    disabled: o.disabled === true || o.enabled === false,
  };
  // Gemini CLI and Qwen Code: `url` is SSE, `httpUrl` Streamable HTTP.
  const geminiSse = (where.client === "gemini" || where.client === "qwen") &&
    o.url !== undefined && o.httpUrl === undefined && type === undefined;
  return entryOf(base, {
    command: o.command,
    args: strings(o.args),
    url,
    sse: type === "sse" || geminiSse,
  });
}

/** Codex's `[mcp_servers.<name>]` table (`command`, `args`, `env`, `env_vars`, `url`, …). */
export function codexEntry(
  name: string,
  raw: unknown,
  where: { file: string; client: string },
): ClientEntry | undefined {
  const o = objectOf(raw);
  if (!o) return undefined;
  const env = stringRecord(o.env);
  for (const v of strings(o.env_vars)) env[v] ??= `\${${v}}`;
  const headerEnv = stringRecord(o.env_http_headers);
  if (typeof o.bearer_token_env_var === "string") {
    headerEnv.Authorization = o.bearer_token_env_var;
  }
  const base = {
    name,
    ...where,
    env,
    headers: stringRecord(o.http_headers),
    headerEnv,
    disabled: o.enabled === false,
  };
  return entryOf(base, { command: o.command, args: strings(o.args), url: o.url });
}

/** opencode's `mcp` entries: `{type: "local", command: [...], environment}` or `{type: "remote", url, headers}`. */
export function opencodeEntry(
  name: string,
  raw: unknown,
  where: { file: string; client: string },
): ClientEntry | undefined {
  const o = objectOf(raw);
  if (!o) return undefined;
  const base = {
    name,
    ...where,
    env: stringRecord(o.environment),
    headers: stringRecord(o.headers),
    headerEnv: {},
    disabled: o.enabled === false,
  };
  const command = strings(o.command);
  return o.type === "local"
    ? entryOf(base, { command: command[0], args: command.slice(1) })
    : o.type === "remote"
    ? entryOf(base, { url: o.url })
    : undefined;
}

/**
 * True for PML's own entry (`pml stdio`, the npm launcher, or `pml serve`'s loopback URL named
 * `pml`): never imported into itself.
 */
export function isPmlEntry(entry: ClientEntry): boolean {
  if (entry.name === "pml") return true;
  const cmd = entry.command ?? "";
  const base = cmd.split(/[\\/]/).pop() ?? "";
  if (base === "pml" && entry.args.includes("stdio")) return true;
  return entry.args.some((a) => /^@casys\/pml(@|$)/.test(a));
}
