/**
 * Runs the real Claude Code CLI (the pinned `@anthropic-ai/claude-code` devDependency) headless
 * (`claude -p`) against the scripted Messages API of `_anthropic_api.ts`, with a private HOME and
 * every proxy variable pointing at an egress trap, so that a run touches nothing but loopback.
 */
import { join } from "node:path";
import type { AnthropicApi } from "./_anthropic_api.ts";
import type { EgressTrap } from "./_egress_trap.ts";

export const ROOT = join(import.meta.dirname!, "..", "..", "..");
export const CLAUDE_BIN = join(ROOT, "node_modules", ".bin", "claude");

/** The environment of a headless Claude Code run: loopback API, no updater, no telemetry. */
export function claudeEnv(
  home: string,
  api: { url: string },
  trap: EgressTrap,
  extra: Record<string, string> = {},
): Record<string, string> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: home,
    LANG: "C.UTF-8",
    ANTHROPIC_BASE_URL: api.url,
    ANTHROPIC_API_KEY: "sk-ant-test-not-a-key",
    DISABLE_AUTOUPDATER: "1",
    DISABLE_TELEMETRY: "1",
    DISABLE_ERROR_REPORTING: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    // MCP tools in the request's `tools` with their schemas, not behind the deferred ToolSearch.
    ENABLE_TOOL_SEARCH: "false",
    // Deno's own update check (pml runs on Deno) would resolve a public host.
    DENO_NO_UPDATE_CHECK: "1",
    // Claude Code's scratch folder (default /tmp/claude-<uid>), removed with HOME.
    CLAUDE_CODE_TMPDIR: join(home, ".claude-tmp"),
    ...trap.env,
    ...extra,
  };
}

/** What `claude -p --output-format json` printed as its final result. */
export interface ClaudeResult {
  readonly is_error: boolean;
  readonly result?: string;
  readonly num_turns?: number;
  readonly permission_denials?: { tool_name: string }[];
}

export interface ClaudeRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly result?: ClaudeResult;
  /** Claude Code's debug log of the run (MCP connection, elicitation, tool calls). */
  readonly debug: string;
  /** A summary for assertion messages. */
  readonly why: string;
}

export interface ClaudeOptions {
  readonly cwd: string;
  readonly home: string;
  readonly api: AnthropicApi;
  readonly trap: EgressTrap;
  readonly prompt?: string;
  /** `mcpServers` for `--mcp-config` (with `--strict-mcp-config`); omit to use the project's `.mcp.json`. */
  readonly mcpServers?: Record<string, unknown>;
  /** Extra settings (`--settings`), e.g. hooks. */
  readonly settings?: Record<string, unknown>;
  /** Tools Claude Code's own permission layer lets run without asking (default: every pml tool). */
  readonly allowedTools?: readonly string[];
  readonly env?: Record<string, string>;
}

/** Runs `claude -p` once and returns what it printed and logged. */
export async function runClaude(o: ClaudeOptions): Promise<ClaudeRun> {
  const debugFile = join(o.home, `claude-debug-${crypto.randomUUID()}.log`);
  const args = [
    "-p",
    o.prompt ?? "Use the pml tools.",
    "--output-format",
    "json",
    "--no-session-persistence",
    "--debug-file",
    debugFile,
  ];
  const allowed = o.allowedTools ?? ["mcp__pml"];
  if (allowed.length > 0) args.push("--allowedTools", ...allowed);
  if (o.mcpServers) {
    args.push("--strict-mcp-config", "--mcp-config", JSON.stringify({ mcpServers: o.mcpServers }));
  }
  if (o.settings) args.push("--settings", JSON.stringify(o.settings));
  const out = await new Deno.Command(CLAUDE_BIN, {
    args,
    cwd: o.cwd,
    env: claudeEnv(o.home, o.api, o.trap, o.env),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const stderr = new TextDecoder().decode(out.stderr);
  let result: ClaudeResult | undefined;
  try {
    result = JSON.parse(stdout);
  } catch { /* not JSON: reported in `why` */ }
  const debug = await Deno.readTextFile(debugFile).catch(() => "");
  const mcpLines = debug.split("\n").filter((l) => /MCP|[Ee]licit|Hook|ERROR/.test(l));
  return {
    code: out.code,
    stdout,
    stderr,
    result,
    debug,
    why: `exit ${out.code}\nstdout: ${stdout.slice(0, 1500)}\nstderr: ${
      stderr.slice(0, 1500)
    }\ndebug (MCP lines):\n${mcpLines.slice(-40).join("\n")}`,
  };
}

/**
 * Approves the project's `.mcp.json` servers the way Claude Code records a user's approval: the
 * workspace trusted in `~/.claude.json`, the servers in `.claude/settings.local.json`.
 */
export async function approveProject(home: string, dir: string, servers = ["pml"]) {
  const path = join(home, ".claude.json");
  const config = JSON.parse(await Deno.readTextFile(path).catch(() => "{}"));
  config.projects = { ...config.projects, [dir]: { hasTrustDialogAccepted: true } };
  await Deno.writeTextFile(path, JSON.stringify(config));
  await Deno.mkdir(join(dir, ".claude"), { recursive: true });
  await Deno.writeTextFile(
    join(dir, ".claude", "settings.local.json"),
    JSON.stringify({ enabledMcpjsonServers: servers }),
  );
}

/** `claude mcp <args>` in `cwd` (e.g. `list`, `get pml`); returns its output. */
export async function claudeMcp(
  args: string[],
  o: { cwd: string; home: string; api: { url: string }; trap: EgressTrap },
): Promise<{ code: number; out: string }> {
  const out = await new Deno.Command(CLAUDE_BIN, {
    args: ["mcp", ...args],
    cwd: o.cwd,
    env: claudeEnv(o.home, o.api, o.trap),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
}
