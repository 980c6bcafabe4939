/**
 * PML std module `shell`: runs a command in the workspace.
 *
 * Runs in a sandbox subprocess granted `--allow-run` and read access to the workspace, with the
 * workspace as working directory and a minimal environment (no API keys). Deno's flags do not bind
 * the programs it starts: on Linux the OS sandbox (bubblewrap, see `os_sandbox.ts`) does, and
 * `shell` is `ask` by default.
 */

/** `signal` aborts when the client cancels the call (`notifications/cancelled`). */
type Ctx = { workspace: string; signal?: AbortSignal };
type Args = Record<string, unknown>;

const MAX_OUTPUT = 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 60_000;

/** The longest `timeout_ms` a caller may ask for. */
const MAX_TIMEOUT_MS = 10 * 60_000;
/** How long output is still read after the command ended (a leftover child may hold the pipe). */
const DRAIN_MS = 200;

/** Reads a stream into at most MAX_OUTPUT bytes (counting the rest) until it ends or is cut. */
function collect(stream: ReadableStream<Uint8Array>) {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let kept = 0;
  let total = 0;
  const done = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        total += value.length;
        if (kept < MAX_OUTPUT) {
          chunks.push(value);
          kept += value.length;
        }
      }
    } catch { /* cut */ }
  })();
  return {
    done,
    cut: () => reader.cancel().catch(() => {}),
    text(): string {
      const bytes = new Uint8Array(kept);
      let at = 0;
      for (const c of chunks) (bytes.set(c, at), at += c.length);
      const shown = new TextDecoder().decode(bytes.subarray(0, MAX_OUTPUT));
      return total > MAX_OUTPUT ? `${shown}\n[... ${total - MAX_OUTPUT} bytes cut]` : shown;
    },
  };
}

/** Kills the command's whole process group (it runs in a session of its own). */
function killGroup(pid: number): void {
  try {
    Deno.kill(-pid, "SIGKILL");
  } catch { /* already gone */ }
}

function spawnInOwnSession(argv: string[], cwd: string): Deno.ChildProcess {
  const opts = { cwd, stdin: "null", stdout: "piped", stderr: "piped" } as const;
  try {
    // `setsid` makes the command the leader of a new session and process group, so that its
    // children (`sleep 1000 &`) can be killed with it.
    return new Deno.Command("setsid", { args: argv, ...opts }).spawn();
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    return new Deno.Command(argv[0], { args: argv.slice(1), ...opts }).spawn();
  }
}

/**
 * Runs `command` through `sh -c` (or `command` with `args` directly when `args` is given) with the
 * workspace as working directory. Returns exit code, stdout and stderr. The command runs in a
 * process group of its own: when it ends, when `timeout_ms` passes, or when the client cancels the
 * call (`ctx.signal`), the whole group is killed, so nothing it started outlives it and a background
 * child holding its output cannot hold the call. A cancelled call throws an `AbortError`.
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
  const t = args.timeout_ms;
  if (
    t !== undefined &&
    (typeof t !== "number" || !Number.isFinite(t) || t <= 0 || t > MAX_TIMEOUT_MS)
  ) {
    throw new TypeError(
      `Argument "timeout_ms" must be a number of milliseconds between 1 and ${MAX_TIMEOUT_MS}, got ${
        JSON.stringify(t)
      }`,
    );
  }
  const timeoutMs = (t as number | undefined) ?? DEFAULT_TIMEOUT_MS;
  const signal = ctx.signal;
  if (signal?.aborted) throw cancelledError(command);
  const child = spawnInOwnSession(
    argv === undefined ? ["sh", "-c", command] : [command, ...(argv as string[])],
    ctx.workspace,
  );
  const stdout = collect(child.stdout);
  const stderr = collect(child.stderr);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup(child.pid);
  }, timeoutMs);
  const onCancel = () => killGroup(child.pid);
  // No options object: the call's end removes it.
  signal?.addEventListener("abort", onCancel);
  try {
    const status = await child.status;
    killGroup(child.pid); // what the command left running ends with it
    let drained: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all([stdout.done, stderr.done]),
      new Promise((r) => (drained = setTimeout(r, DRAIN_MS))),
    ]);
    clearTimeout(drained);
    await Promise.all([stdout.cut(), stderr.cut()]);
    if (signal?.aborted && !timedOut) throw cancelledError(command);
    return { code: status.code, stdout: stdout.text(), stderr: stderr.text(), timedOut };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onCancel);
  }
}

function cancelledError(command: string): Error {
  return new DOMException(
    `Command ${
      JSON.stringify(command)
    } was cancelled by the client; it and everything it started were killed`,
    "AbortError",
  );
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
          timeout_ms: {
            type: "number",
            description:
              "Kill the command (and everything it started) after this many ms; default 60000, at most 600000",
          },
        },
        required: ["command"],
      },
      paths: [],
      access: "run",
    },
  },
} as const;
