/**
 * What the CLI commands write to and read from; `main.ts` passes the real process, tests pass
 * recorders.
 *
 * @module
 */

/** Output lines and environment of a CLI run. */
export interface CliIo {
  stdout(line: string): void;
  stderr(line: string): void;
  env(name: string): string | undefined;
  readonly cwd: string;
}

/** The real process: `console.log`, `console.error`, `Deno.env`, `Deno.cwd()`. */
export function processIo(): CliIo {
  return {
    stdout: (line) => console.log(line),
    stderr: (line) => console.error(line),
    env: (name) => Deno.env.get(name),
    cwd: Deno.cwd(),
  };
}
