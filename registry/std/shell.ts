/**
 * PML std module `shell`: runs a command in the workspace.
 *
 * Runs in a sandbox subprocess granted `--allow-run` and read access to the workspace, with the
 * workspace as working directory and a minimal environment (no API keys). The command's own
 * children are ordinary processes: that is why `shell` is `ask` by default.
 */

type Ctx = { workspace: string };
type Args = Record<string, unknown>;

const MAX_OUTPUT = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 60_000;

function clip(bytes: Uint8Array): string {
  const text = new TextDecoder().decode(bytes.subarray(0, MAX_OUTPUT));
  return bytes.length > MAX_OUTPUT ? `${text}\n[... ${bytes.length - MAX_OUTPUT} bytes cut]` : text;
}

/**
 * Runs `command` through `sh -c` (or `command` with `args` directly when `args` is given) with the
 * workspace as working directory. Returns exit code, stdout and stderr; a timeout kills it.
 */
export async function exec(
  args: Args,
  ctx: Ctx,
): Promise<{ code: number; stdout: string; stderr: string; timedOut: boolean }> {
  const command = args.command;
  if (typeof command !== "string" || command.trim() === "") {
    throw new TypeError(`Argument "command" must be a non-empty string`);
  }
  const argv = args.args;
  if (argv !== undefined && (!Array.isArray(argv) || argv.some((a) => typeof a !== "string"))) {
    throw new TypeError(`Argument "args" must be an array of strings`);
  }
  const timeoutMs = typeof args.timeout_ms === "number" ? args.timeout_ms : DEFAULT_TIMEOUT_MS;
  const child = new Deno.Command(argv === undefined ? "sh" : command, {
    args: argv === undefined ? ["-c", command] : (argv as string[]),
    cwd: ctx.workspace,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  }, timeoutMs);
  try {
    const out = await child.output();
    return { code: out.code, stdout: clip(out.stdout), stderr: clip(out.stderr), timedOut };
  } finally {
    clearTimeout(timer);
  }
}

/** Tool descriptions and input schemas. */
export const __meta__ = {
  namespace: "shell",
  description: "Run shell commands in the workspace",
  tools: {
    exec: {
      description: "Run a command in the workspace directory; returns exit code, stdout and stderr",
      inputSchema: {
        type: "object",
        properties: {
          command: { type: "string", description: "Shell command line (run with sh -c)" },
          args: {
            type: "array",
            items: { type: "string" },
            description: "If given, run `command` directly with these arguments (no shell)",
          },
          timeout_ms: { type: "number", description: "Kill the command after this many ms" },
        },
        required: ["command"],
      },
      paths: [],
      access: "run",
    },
  },
} as const;
