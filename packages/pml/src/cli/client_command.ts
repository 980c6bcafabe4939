/**
 * The command `pml init` writes into client files: `pml` when the `PATH` finds one (the files then
 * work in a teammate's checkout too), this installation's launcher by its absolute path only when
 * it does not, each said on the terminal.
 *
 * @module
 */
import { join } from "node:path";
import { realPathOf } from "../exists.ts";

/** What the client files name, and what `pml init` says about it. */
export interface ClientCommand {
  readonly command: string;
  readonly note?: string;
}

/** The executable `pml` the `PATH` finds, or `undefined`. */
export function pmlOnPath(path: string | undefined): string | undefined {
  for (const dir of (path ?? "").split(":")) {
    if (!dir) continue;
    const candidate = join(dir, "pml");
    try {
      const info = Deno.statSync(candidate);
      if (info.isFile && (info.mode === null || (info.mode & 0o111) !== 0)) return candidate;
    } catch {
      // not in this folder
    }
  }
  return undefined;
}

/**
 * `launcher`: how this `pml` was started (`PML_LAUNCHER`, an absolute path, or a bare `pml`).
 *
 * @example
 * ```ts
 * clientCommand("/opt/pml/bin/pml", "/usr/bin:/opt/pml/bin"); // { command: "pml" }
 * ```
 */
export function clientCommand(launcher: string, path: string | undefined): ClientCommand {
  if (!launcher.includes("/")) return { command: launcher };
  const found = pmlOnPath(path);
  if (!found) {
    return {
      command: launcher,
      note: `\`pml\` is not on your PATH, so the client files name this installation by its ` +
        `absolute path, ${launcher}, which another checkout or a teammate's machine does not ` +
        `have: put pml on your PATH (\`npm link\` in the clone; docs/install.md) and run ` +
        `\`pml init\` again to write \`pml\``,
    };
  }
  if ((realPathOf(found) ?? found) === (realPathOf(launcher) ?? launcher)) {
    return { command: "pml" };
  }
  return {
    command: "pml",
    note: `The client files name \`pml\`, and your PATH finds ${found}, not the pml you ran ` +
      `(${launcher}): the clients run that one`,
  };
}
