/** Helpers for end-to-end tests: spawn `bin/pml` as an MCP client would. */
import { join } from "node:path";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { StdioClientTransport } from "../../packages/pml/src/sdk/stdio_client.ts";
import { ElicitRequestSchema } from "../../packages/pml/src/sdk/types.ts";
import { liveProcesses } from "../../packages/pml/src/procfs.ts";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { textOf } from "../../packages/pml/src/testing/workspace.ts";

export const PML_BIN = join(import.meta.dirname!, "..", "..", "bin", "pml");

/**
 * Environment for a spawned `pml`: PATH, a private HOME/PML_HOME, the workspace, extras, and the
 * OS wall the tests run under when `PML_SANDBOX_WALL` forces one (docs/security.md).
 */
export function pmlEnv(ws: { dir: string; home: string }, extra: Record<string, string> = {}) {
  const wall = Deno.env.get("PML_SANDBOX_WALL");
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    ...(wall ? { PML_SANDBOX_WALL: wall } : {}),
    HOME: ws.home,
    PML_WORKSPACE: ws.dir,
    ...extra,
  };
}

/** What {@link runPml} gives back: the exit code, and the output decoded. */
export interface PmlRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout then stderr, for assertions that do not care which. */
  readonly text: string;
}

/**
 * Runs `bin/pml ARGS…` in the workspace as a human does in a terminal (`pml approve ID`,
 * `pml approvals`, `pml import`): no stdin, the environment of {@link pmlEnv} plus `env`.
 */
export async function runPml(
  ws: { dir: string; home: string },
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<PmlRun> {
  const out = await new Deno.Command(PML_BIN, {
    args: [...args],
    cwd: ws.dir,
    env: pmlEnv(ws, env),
    clearEnv: true,
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  const stdout = dec.decode(out.stdout);
  const stderr = dec.decode(out.stderr);
  return { code: out.code, stdout, stderr, text: stdout + stderr };
}

/**
 * Spawns `pml stdio` (by default `bin/pml`; `command` and `args` start another form of it) and
 * connects an SDK client over stdio.
 */
export async function connectStdio(
  ws: { dir: string; home: string },
  opts: {
    env?: Record<string, string>;
    elicit?: (message: string) => "yes" | "always" | "no";
    command?: string;
    args?: string[];
  } = {},
): Promise<
  Client & AsyncDisposable & { readonly pid: number; readonly stderr: () => string }
> {
  const transport = new StdioClientTransport({
    command: opts.command ?? PML_BIN,
    args: opts.args ?? ["stdio"],
    cwd: ws.dir,
    env: pmlEnv(ws, opts.env),
    stderr: "pipe",
  });
  const client = new Client(
    { name: "e2e", version: "1" },
    { capabilities: opts.elicit ? { elicitation: {} } : {} },
  );
  if (opts.elicit) {
    const elicit = opts.elicit;
    client.setRequestHandler(ElicitRequestSchema, (req) => ({
      action: "accept",
      content: { decision: elicit(req.params.message) },
    }));
  }
  await client.connect(transport);
  // What pml tells the human (its stderr: the client's MCP log), read as it comes.
  let stderr = "";
  const decoder = new TextDecoder();
  transport.stderr?.on("data", (chunk: Uint8Array) => {
    stderr += decoder.decode(chunk, { stream: true });
  });
  return Object.assign(client, {
    [Symbol.asyncDispose]: () => client.close(),
    pid: transport.pid!,
    stderr: () => stderr,
  });
}

export { childPids, processAlive } from "../../packages/pml/src/procfs.ts";

/** Command lines of `pid` and all its descendants (what runs: launcher, bundle, sandboxes). */
export function treeCommands(pid: number): string[] {
  const procs = liveProcesses();
  const out: string[] = [];
  const stack = [pid];
  while (stack.length) {
    const p = stack.pop()!;
    try {
      out.push(Deno.readTextFileSync(`/proc/${p}/cmdline`).replaceAll("\0", " "));
    } catch { /* gone */ }
    stack.push(...procs.filter((c) => c.ppid === p).map((c) => c.pid));
  }
  return out;
}

/**
 * The command lines under `pid` once each of `want` appears in them (a sandbox the pool starts in
 * the background may take a moment), joined by newlines; after `waitMs`, whatever runs then.
 */
export async function commandsOnceRunning(
  pid: number,
  want: readonly string[],
  waitMs: number,
): Promise<string> {
  let commands = "";
  for (let i = 0; i < waitMs / 50; i++) {
    commands = treeCommands(pid).join("\n");
    if (want.every((w) => commands.includes(w))) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return commands;
}

/**
 * What each form of `pml stdio` (the bundle, the npm package) must do for a client: list the std
 * tools and `pml:execute`, read the workspace's `a.txt` (which holds `text`), and run code that
 * reads it.
 */
export async function assertServesWorkspace(client: Client, text: string): Promise<void> {
  const names = (await client.listTools()).tools.map((t) => t.name);
  for (const name of ["filesystem__read_file", "pml__execute"]) {
    assert(names.includes(name), names.join(", "));
  }
  const read = await client.callTool({
    name: "filesystem__read_file",
    arguments: { path: "a.txt" },
  });
  assertEquals(textOf(read), text);
  const exec = await client.callTool({
    name: "pml__execute",
    arguments: { code: 'return (await mcp.filesystem.read_file({ path: "a.txt" })).length;' },
  });
  assert(!exec.isError && textOf(exec).includes(`"result":${text.length}`), textOf(exec));
}
