import { printableOutput } from "../sandbox/printable.ts";

/** The outside world of a CLI command, injectable for tests. */
export interface CliIo {
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly home?: string;
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Asks a question on the terminal; `undefined` when there is no terminal. */
  readonly prompt?: (question: string) => Promise<string | null>;
  readonly isTerminal: boolean;
}

/**
 * `io` whose stdout, stderr and questions show terminal and Unicode controls as escapes
 * ({@link printableOutput}): whatever a command prints of a client's file, a `.pml.json`, an
 * agent's arguments or a server's answer can neither clear the screen nor rewrite a line (`--json`
 * outputs stay the same JSON). Fields of one line are escaped where they are printed
 * (`printableLine`), so they cannot start a line of their own either.
 */
export function terminalSafe(io: CliIo): CliIo {
  const prompt = io.prompt;
  return {
    ...io,
    stdout: (t) => io.stdout(printableOutput(t)),
    stderr: (t) => io.stderr(printableOutput(t)),
    prompt: prompt && ((q) => prompt(printableOutput(q))),
  };
}

/** The real process I/O. */
export function processIo(): CliIo {
  const encoder = new TextEncoder();
  const isTerminal = Deno.stdin.isTerminal();
  return {
    env: Deno.env.toObject(),
    cwd: Deno.cwd(),
    home: Deno.env.get("HOME"),
    stdout: (t) => Deno.stdout.writeSync(encoder.encode(t)),
    stderr: (t) => Deno.stderr.writeSync(encoder.encode(t)),
    prompt: isTerminal ? (q) => Promise.resolve(prompt(q)) : undefined,
    isTerminal,
  };
}
