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
