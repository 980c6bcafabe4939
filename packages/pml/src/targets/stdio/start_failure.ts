/**
 * Why a stdio server could not start, in PML's words: what was missing (a read grant, a runtime,
 * a network or environment grant) and where to add it, read from the server's last stderr lines
 * (Node's `Cannot find module` and `Cannot find package`, `ENOENT`, Deno's `Requires read access to …`, the sandbox's failed
 * `execvp`). The sandbox's own command line is never the message: the declared command is.
 *
 * @module
 */

/** One thing a server lacked, and the hint that fixes it. */
export interface MissingGrant {
  readonly missing: "read" | "write" | "net" | "env" | "runtime";
  readonly what: string;
  readonly hint: string;
}

const RULES: readonly [RegExp, (m: RegExpMatchArray, server: string) => MissingGrant][] = [
  [
    /Requires (read|write) access to "([^"]+)"/,
    (m, s) => ({
      missing: m[1] as "read" | "write",
      what: m[2],
      hint: `add "${m[2]}" to private_mcps.${s}.permissions.${m[1]} in .pml.json`,
    }),
  ],
  [
    /Requires net access to "([^"]+)"/,
    (m, s) => ({
      missing: "net",
      what: m[1],
      hint: `add "${m[1]}" to private_mcps.${s}.permissions.net in .pml.json`,
    }),
  ],
  [
    /Requires env access to "([^"]+)"/,
    (m, s) => ({
      missing: "env",
      what: m[1],
      hint: `add "${m[1]}" to private_mcps.${s}.permissions.env in .pml.json`,
    }),
  ],
  [
    /execvp ([^:]+): No such file or directory/,
    (m) => ({ missing: "runtime", what: m[1], hint: `install "${m[1]}" or put it on the PATH` }),
  ],
  [
    // Node's ES module loader: a package its import names is not where Node looks (node_modules).
    /Cannot find package '([^']+)' imported from/,
    (m, s) => ({
      missing: "read",
      what: m[1],
      hint: `the sandbox shows the workspace, the command's own files (its package and the ` +
        `node_modules folders it sits in) and what .pml.json grants; add the node_modules ` +
        `folder that holds "${m[1]}" to private_mcps.${s}.permissions.read`,
    }),
  ],
  [
    /Cannot find module '([^']+)'|ENOENT[^']*'([^']+)'|can't open file '([^']+)'|No such file or directory: '([^']+)'/,
    (m, s) => {
      const path = m[1] ?? m[2] ?? m[3] ?? m[4];
      return {
        missing: "read",
        what: path,
        hint:
          `the sandbox shows the workspace, the command's own files and what .pml.json grants; ` +
          `if "${path}" exists, add its folder to private_mcps.${s}.permissions.read`,
      };
    },
  ],
];

/** What `stderr` says was missing, if it says. */
export function missingGrant(stderr: string, server: string): MissingGrant | undefined {
  for (const [re, make] of RULES) {
    const m = stderr.match(re);
    if (m) return make(m, server);
  }
  return undefined;
}

/**
 * The message of a failed start: the declared command, how it ended, what was missing (when the
 * stderr says), and the last stderr lines.
 */
export function startFailureMessage(
  server: string,
  declared: string,
  why: string,
  stderr: string,
): { message: string; missing?: MissingGrant } {
  const missing = missingGrant(stderr, server);
  const lead = `Cannot start ${server} ("${declared}"): it ${why}`;
  const need = missing
    ? `; it needs ${missing.missing} access to "${missing.what}": ${missing.hint}`
    : "";
  const lines = stderr.split("\n");
  const tail = lines.slice(-8);
  // The line that said what was missing, when a stack trace pushed it out of the tail.
  const said = missing && lines.find((l) => l.includes(missing.what));
  if (said && !tail.includes(said)) tail.unshift(said, "…");
  const shown = tail.join("\n");
  return { message: lead + need + (shown ? `\nstderr:\n${shown}` : ""), missing };
}
