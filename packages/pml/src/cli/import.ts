/**
 * `pml import [--from CLIENT|PATH] [--yes] [--move]`: brings the MCP servers the user's agents
 * already run behind PML (docs/import.md). Shows each server (kind, command, package, names of its
 * environment variables, never values), asks on the terminal (or `--yes`), writes them as
 * `private_mcps` of `.pml.json` (a human's decision: the file stays trusted), and with `--move`
 * removes those the workspace owns from the client's file (kept as `<file>.backup`) so the agent
 * reaches them only through PML; servers of the user's own files serve the user's other projects
 * too and stay there unless `--move-user` says otherwise (`import/move_plan.ts`).
 *
 * @module
 */
import { join } from "node:path";
import { readJsonObject } from "../config/write_json.ts";
import { writeHumanConfig } from "../config/human_write.ts";
import { isTrusted } from "../config/trust_store.ts";
import { resolveWorkspace } from "../config/workspace.ts";
import { type NpmResolver, NpmViewResolver } from "../deps/npm_resolver.ts";
import { errorMessage, PmlError } from "../errors.ts";
import { CONFIG_FILE, loadConfig, pmlHomeOf } from "../config/config.ts";
import { createGateway } from "../gateway/create_gateway.ts";
import type { StdioTarget } from "../targets/stdio/stdio_target.ts";
import { objectOf } from "../import/client_entry.ts";
import { removeFromClientFile } from "../import/client_files.ts";
import {
  findServers,
  type FoundServers,
  type ImportFrom,
  shortPath,
} from "../import/find_servers.ts";
import { planMove } from "../import/move_plan.ts";
import { type ImportedServer, refs, signInNote } from "../import/to_private_mcp.ts";
import { STD_MODULES } from "../targets/std/std_target.ts";
import type { CliIo } from "./io.ts";
import { printable, printableLine as q } from "../sandbox/printable.ts";

/** Options of `pml import`. */
export interface ImportOptions {
  readonly from?: ImportFrom;
  readonly yes: boolean;
  /** Removes the imported servers the workspace owns from their client's files. */
  readonly move: boolean;
  /** With `move`: the user-level files' servers too (every other project of the user loses them). */
  readonly moveUser?: boolean;
  /** Injectable for tests (default: `npm view`). */
  readonly resolver?: NpmResolver;
  /** Installs and starts the written servers to pin their tools (default: {@link pinServers}). */
  readonly pinner?: Pinner;
}

/** Pins the tools of imported servers; false when one failed (said on stdout). */
export type Pinner = (servers: readonly ImportedServer[], io: CliIo) => Promise<boolean>;

/**
 * The default {@link Pinner}: through the gateway the new `.pml.json` makes, each stdio server is
 * installed (npm: its pinned package, integrity verified), recorded as approved (`.pml/deps.json`:
 * the human just decided), started in the OS sandbox, and its own tool list pinned in
 * `.pml/mcp.lock`. A failure is said with its reason; the server is then set up on first use.
 */
export const pinServers: Pinner = async (servers, io) => {
  const stdio = servers.filter((s) => s.kind !== "remote");
  if (!stdio.length) return true;
  const gateway = createGateway(loadConfig({ env: io.env, cwd: io.cwd, home: io.home }));
  let ok = true;
  try {
    const target = gateway.target("stdio") as StdioTarget;
    for (const s of stdio) {
      io.stdout(`Setting up ${s.name}…\n`);
      try {
        const tools = await target.pinServer(s.name, (m) => m && io.stdout(`  ${printable(m)}\n`));
        io.stdout(
          `  ${tools.length} tool(s) pinned in .pml/mcp.lock: ${
            tools.map((t) => q(t.name)).join(", ")
          }\n`,
        );
        const reads = tools.filter(onlyReads).map((t) => q(t.name));
        if (reads.length) {
          io.stdout(`  read-only by their pinned definition (readOnlyHint): ${reads.join(", ")}\n`);
        }
      } catch (err) {
        ok = false;
        io.stdout(
          `  not set up: ${printable(errorMessage(err))}\n  (it is set up on first use instead)\n`,
        );
      }
    }
  } finally {
    await gateway.close();
  }
  return ok;
};

/** A pinned definition that says it only reads (as `McpPins.pinnedReadOnly` judges it). */
function onlyReads(tool: object): boolean {
  const a = (tool as { annotations?: unknown }).annotations as {
    readOnlyHint?: unknown;
    destructiveHint?: unknown;
  } | undefined;
  return a?.readOnlyHint === true && a.destructiveHint !== true;
}

/**
 * Who answers the questions about the imported servers' tools (docs/approvals.md "Who decides"),
 * by the `approvals` of `.pml.json` (`agent` counts only in a trusted file).
 */
export function whoAnswers(approvals: unknown, trusted: boolean, example: string): string {
  const asked = `Calls to their tools are asked unless "permissions.allow" names them ` +
    `(e.g. "${example}")`;
  const you = "in the client's own prompt when it asks you, otherwise with `pml approve ID` or " +
    "on the page of `pml approvals --open`";
  if (approvals === "agent" && trusted) {
    return `${asked}; the agent answers those questions ("approvals": "agent" in ${CONFIG_FILE})`;
  }
  if (approvals === "human") return `${asked}; you answer every one of them, ${you}`;
  return `${asked}. You answer those questions, not the agent: ${you}. The agent may answer ` +
    `only for a tool whose pinned definition says it only reads (readOnlyHint)`;
}

/** Lines of "Skipped …" shown at most (the rest counted). */
const SHOWN_SKIPPED = 20;

/** Namespaces an imported server never takes (PML's own tools). */
const RESERVED = new Set(["pml", ...Object.keys(STD_MODULES)]);

/** How one server is shown before the question. */
export function describeServer(s: ImportedServer, where: string): string {
  const mcp = s.mcp as {
    install?: { command: string; args: string[] };
    proxyTo?: string;
    transport?: string;
    headers?: Record<string, string>;
    permissions?: { read?: string[]; write?: string[] };
  };
  const lines = [`${s.name}  (from ${q(where)}, "${q(s.entry.name)}")`];
  if (s.kind === "npm" && s.package) {
    lines.push(
      `  kind:     npm package, pinned: ${q(s.package.name)}@${q(s.package.version)} (${
        s.package.integrity ? `${q(s.package.integrity.slice(0, 23))}…` : "NO integrity pinned"
      })`,
      `  runs:     under Deno in the OS sandbox; network only while PML installs it`,
    );
  } else if (s.kind === "command") {
    lines.push(`  kind:     raw command, runs in the OS sandbox (nothing pinned but the command)`);
  } else {
    lines.push(
      `  kind:     remote ${q(String(mcp.transport))} server, proxied by pml: ${
        q(String(mcp.proxyTo))
      }`,
    );
  }
  if (mcp.install) {
    lines.push(`  command:  ${[mcp.install.command, ...mcp.install.args].map(q).join(" ")}`);
  }
  if (mcp.headers) lines.push(`  headers:  ${Object.keys(mcp.headers).map(q).join(", ")}`);
  if (s.envNames.length) lines.push(`  env:      ${s.envNames.map(q).join(", ")} (names only)`);
  const grants = [
    ...(mcp.permissions?.read ?? []).map((p) => `reads ${q(p)}`),
    ...(mcp.permissions?.write ?? []).map((p) => `writes ${q(p)}`),
  ];
  if (grants.length) lines.push(`  grants:   ${grants.join(", ")}`);
  for (const n of s.notes) lines.push(`  note:     ${q(n)}`);
  return lines.join("\n");
}

/**
 * `--move`: removes the imported servers from their client's files, each file written once with
 * one backup of its original; the user-level ones only when `user`. Returns the variables the
 * client gave them that did not go into its `pml` entry (to be set for `pml`), and those that did
 * with the values the client gave them.
 */
async function moveServers(
  found: FoundServers,
  user: boolean,
  io: CliIo,
  ctx: { workspace: string; home?: string },
): Promise<{ unset: Set<string>; moved: Record<string, string> }> {
  const unset = new Set<string>();
  const moved: Record<string, string> = {};
  const { moves, left } = planMove(found.servers, found.sources, { user });
  for (const { file, removals, servers } of moves) {
    const { envMoved } = await removeFromClientFile(file, removals);
    io.stdout(
      `Removed ${servers.map((s) => `"${q(s.entry.name)}"`).join(", ")} from ${q(file.path)} ` +
        `(the previous file is ${q(file.path)}.backup)\n`,
    );
    if (envMoved.size) {
      io.stdout(
        `Moved their variables (${[...envMoved].map(q).join(", ")}) into its "pml" entry's env\n`,
      );
    }
    for (const s of servers) {
      for (const [k, v] of Object.entries(s.values)) {
        if (envMoved.has(k)) moved[k] = v;
        else unset.add(k);
      }
    }
  }
  for (const [path, servers] of left) {
    io.stdout(
      `Left ${servers.map((s) => `"${q(s.entry.name)}"`).join(", ")} in ${
        q(shortPath(path, ctx))
      }: ` +
        `your user-level configuration, which your other projects read too (the client still ` +
        `runs them itself as well); \`pml import --move-user\` removes them from it, and those ` +
        `projects then lose them\n`,
    );
    for (const s of servers) for (const k of Object.keys(s.values)) unset.add(k);
  }
  return { unset, moved };
}

/** See the module documentation. Returns the exit code. */
export async function runImport(opts: ImportOptions, io: CliIo): Promise<number> {
  const ws = resolveWorkspace({ env: io.env, cwd: io.cwd });
  if (ws.warning) io.stderr(ws.warning + "\n");
  const workspace = ws.path;
  const configPath = join(workspace, CONFIG_FILE);
  const current = await readJsonObject(configPath).catch((err) => {
    throw new PmlError("CONFIG_INVALID", `Cannot update ${configPath}: ${(err as Error).message}`);
  });
  const privateMcps = objectOf(current?.private_mcps) ?? {};
  const ctx = { workspace, home: io.home };
  const found = await findServers(opts.from, {
    ...ctx,
    cwd: io.cwd,
    resolver: opts.resolver ?? new NpmViewResolver({ env: io.env }),
    existing: new Set(Object.keys(privateMcps)),
    reserved: RESERVED,
  });
  for (const { entry, reason } of found.skipped.slice(0, SHOWN_SKIPPED)) {
    io.stdout(`Skipped "${q(entry.name)}" (${q(shortPath(entry.file, ctx))}): ${q(reason)}\n`);
  }
  if (found.skipped.length > SHOWN_SKIPPED) {
    io.stdout(`… and ${found.skipped.length - SHOWN_SKIPPED} more left aside\n`);
  }
  for (const m of found.missing) {
    io.stdout(`Note: the server.json leaves ${q(m)} open; add it to the entry in ${CONFIG_FILE}\n`);
  }
  if (!found.servers.length) {
    io.stdout("No MCP server to import.\n");
    return found.skipped.some((s) => s.failed) ? 1 : 0;
  }
  io.stdout(`Found ${found.servers.length} MCP server(s) to bring behind PML:\n\n`);
  for (const s of found.servers) {
    io.stdout(describeServer(s, shortPath(s.entry.file, ctx)) + "\n\n");
  }
  if (!opts.yes) {
    if (!io.isTerminal || !io.prompt) {
      throw new PmlError(
        "IMPORT_NOT_CONFIRMED",
        "pml import needs your confirmation: run it in a terminal, or with --yes",
      );
    }
    const what = opts.moveUser
      ? "and remove them from the client files, your user-level files included (backups kept)"
      : opts.move
      ? "and remove this project's from the client files (backups kept)"
      : "";
    const answer = ((await io.prompt(`Write them to ${configPath} ${what}? [y/N]`)) ?? "").trim();
    if (!/^y(es)?$/i.test(answer)) {
      io.stdout("Nothing written.\n");
      return 0;
    }
  }
  const next = {
    ...(current ?? { workspace: "." }),
    private_mcps: {
      ...privateMcps,
      ...Object.fromEntries(found.servers.map((s) => [s.name, s.mcp])),
    },
  };
  const text = JSON.stringify(next, null, 2) + "\n";
  const pmlHome = pmlHomeOf(io.env, io.home ?? io.env.HOME ?? workspace);
  await writeHumanConfig(configPath, text, { pmlHome, env: io.env });
  io.stdout(`Wrote ${found.servers.map((s) => s.name).join(", ")} to ${configPath}\n`);
  // A file that was not trusted before stays so (one decision does not vouch for the rest of it).
  const trusted = isTrusted(pmlHome, workspace, text);
  if (!trusted) {
    io.stdout(
      `${configPath} is not trusted yet (it was not before this import): its private_mcps take ` +
        `effect once you review it with \`pml trust\`\n`,
    );
  }

  const { unset, moved } = opts.move || opts.moveUser
    ? await moveServers(found, opts.moveUser === true, io, ctx)
    : { unset: new Set(found.servers.flatMap((s) => Object.keys(s.values))), moved: {} };
  // A variable moved into the client's `pml` entry is set where pml runs: not asked for again.
  const needed = new Set(
    found.servers.flatMap((s) => s.envNames).filter((n) => !io.env[n] && !(n in moved)),
  );
  for (const n of unset) needed.add(n);
  if (needed.size) {
    io.stdout(
      `Set ${
        [...needed].map(q).join(", ")
      } in the environment pml runs in (the "env" of its entry in your ` +
        `client's configuration); ${CONFIG_FILE} keeps only their names\n`,
    );
  }
  const signIns = found.servers.filter((s) => s.notes.some((n) => n === signInNote(s.name)));
  if (signIns.length) {
    io.stdout(
      `${signIns.map((s) => s.name).join(", ")}: each asks you to sign in on first use where it ` +
        `signs in with OAuth (\`pml auth NAME\` signs in ahead; \`pml auth --list\` shows what ` +
        `is signed in)\n`,
    );
  }
  // The set-up runs the servers as pml will: with the values the client now hands to pml (a
  // reference such as ${X} is the client's to expand, so only values written as they are).
  const given = Object.entries(moved).filter(([k, v]) => !refs(v).length && !io.env[k]);
  const setupIo = given.length ? { ...io, env: { ...io.env, ...Object.fromEntries(given) } } : io;
  const pinned = trusted ? await (opts.pinner ?? pinServers)(found.servers, setupIo) : true;
  io.stdout(whoAnswers(current?.approvals, trusted, found.servers[0].name) + "\n");
  return found.skipped.some((s) => s.failed) || !pinned ? 1 : 0;
}
