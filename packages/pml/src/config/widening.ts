/**
 * What a `.pml.json` widens beyond the built-in defaults (DESIGN §13 "Workspace trust"), and the
 * part of it that applies while no human trusted it: the defaults (filesystem reads allowed, writes
 * and shell asked, installs and integrity decided by a human) plus what only narrows them (`deny`
 * and `ask` entries, `approvals: "human"`, `sandbox.deny`, the port, `notify`).
 *
 * Widening: an `allow` entry other than an exact read tool, `approvals: "agent"`, `sandbox` read or
 * write grants outside the workspace, `sandbox.net`, `sandbox.unconfined`, `sandbox.sshAgent`, any
 * `private_mcps` entry (it runs a command or code that came with the folder), `registries`, a
 * `workspace` outside the folder, a `cloudUrl` other than the default (the API key is sent there),
 * `env` (BYOK variables sent to cloud tools), a `lockfile.maxAgeDays` below the default (pins
 * dropped, then re-pinned without a question, sooner), and any `${VAR}` (a value of the user's
 * environment: an untrusted file is never expanded, so no notice quotes a key it names).
 *
 * @module
 */
import { within } from "./control_files.ts";
import { realOrResolved } from "./workspace.ts";
import {
  DEFAULT_CLOUD_URL,
  DEFAULT_LOCK_MAX_AGE_DAYS,
  DEFAULT_PERMISSIONS,
  FILESYSTEM_READ_TOOLS,
  METADATA_PLACEHOLDERS,
} from "./defaults.ts";
import type { PmlFile } from "./schema.ts";

const READS: ReadonlySet<string> = new Set(FILESYSTEM_READ_TOOLS);

/**
 * What `file` (parsed, as written: variables not expanded) widens beyond the built-in defaults, one line each, for
 * `pml trust`, `pml status` and the notices. Empty: the file only narrows, and applies as it is.
 *
 * @example
 * ```ts
 * wideningOf({ permissions: { allow: ["*"], ask: [], deny: [] } }, "/home/a/proj");
 * // ['permissions.allow "*" (beyond the read tools)']
 * ```
 */
export function wideningOf(file: PmlFile, folder: string): string[] {
  const out: string[] = [];
  for (const p of file.permissions?.allow ?? []) {
    if (!READS.has(p)) out.push(`permissions.allow "${p}" (beyond the read tools)`);
  }
  if (file.approvals === "agent") out.push(`approvals "agent" (the agent answers approvals)`);
  for (const kind of ["read", "write"] as const) {
    for (const p of file.sandbox?.[kind] ?? []) {
      const real = realOrResolved(folder, p);
      if (!within(real, folder)) out.push(`sandbox.${kind} "${real}" (outside the workspace)`);
    }
  }
  for (const host of file.sandbox?.net ?? []) out.push(`sandbox.net "${host}"`);
  if (file.sandbox?.unconfined) out.push(`sandbox.unconfined (runs without the OS sandbox)`);
  if (file.sandbox?.sshAgent) out.push(`sandbox.sshAgent (the shell may use your SSH agent)`);
  for (const [name, mcp] of Object.entries(file.private_mcps ?? {})) {
    const what = mcp.install
      ? `runs ${[mcp.install.command, ...mcp.install.args].join(" ")}`
      : mcp.proxyTo
      ? `proxies to ${mcp.proxyTo}`
      : `runs the ${mcp.type} code ${mcp.module ?? "given inline"}`;
    out.push(`private_mcps.${name} (${what})`);
  }
  for (const url of file.registries ?? []) out.push(`registries "${url}" (code loaded from there)`);
  if (file.workspace !== undefined) {
    const target = realOrResolved(folder, file.workspace);
    if (!within(target, folder)) out.push(`workspace "${target}" (outside this folder)`);
  }
  if (
    file.cloudUrl !== undefined &&
    file.cloudUrl.replace(/\/+$/, "") !== DEFAULT_CLOUD_URL
  ) out.push(`cloudUrl "${file.cloudUrl}" (receives your PML API key)`);
  for (const name of file.env ?? []) out.push(`env "${name}" (sent to cloud tools)`);
  for (const { at, value, names } of variablesOf(file)) {
    const vars = names.map((n) => `\${${n}}`).join(", ");
    out.push(`${at} "${value}" (reads ${vars} from your environment: expanded only once trusted)`);
  }
  if (shortensPins(file)) {
    out.push(
      `lockfile.maxAgeDays ${file.lockfile!.maxAgeDays} (pins dropped sooner than the default ` +
        `${DEFAULT_LOCK_MAX_AGE_DAYS} days, then pinned again without a question)`,
    );
  }
  return out;
}

/**
 * Every string of `value` (a file as written) that names a `${NAME}`, with where it stands (array
 * indexes left out: `sandbox.write`) and the names; the metadata placeholders inside
 * `private_mcps` are no variables (the launcher fills them).
 */
function variablesOf(value: unknown, at = ""): { at: string; value: string; names: string[] }[] {
  if (typeof value === "string") {
    const inMcps = at.startsWith("private_mcps.");
    const names = [...value.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)]
      .map(([, name]) => name)
      .filter((name) => !(inMcps && METADATA_PLACEHOLDERS.has(name)));
    return names.length ? [{ at, value, names: [...new Set(names)] }] : [];
  }
  if (Array.isArray(value)) return value.flatMap((v) => variablesOf(v, at));
  if (value && typeof value === "object") {
    return Object.entries(value).flatMap(([k, v]) => variablesOf(v, at ? `${at}.${k}` : k));
  }
  return [];
}

/** A `lockfile.maxAgeDays` below the default: pins are dropped (and re-pinned unasked) sooner. */
function shortensPins(file: PmlFile): boolean {
  const days = file.lockfile?.maxAgeDays;
  return days !== undefined && days !== 0 && days < DEFAULT_LOCK_MAX_AGE_DAYS;
}

/**
 * Top-level keys that widen nothing and apply as written: the port, and the desktop notification
 * of a waiting approval (a human channel).
 */
const NEUTRAL_KEYS: ReadonlySet<string> = new Set(["$schema", "version", "port", "notify"]);

/**
 * The part of `file` that applies while it is not trusted: the built-in permissions plus its own
 * `deny` and `ask` entries, `approvals: "human"`, and the keys that widen nothing.
 */
export function narrowedFile(file: PmlFile): PmlFile {
  const kept = Object.fromEntries(
    Object.entries(file).filter(([key, value]) => NEUTRAL_KEYS.has(key) && value !== undefined),
  );
  return {
    ...kept,
    ...(file.approvals === "human" ? { approvals: "human" as const } : {}),
    ...(file.sandbox?.deny?.length ? { sandbox: { deny: [...file.sandbox.deny] } } : {}),
    ...(file.lockfile && !shortensPins(file) ? { lockfile: { ...file.lockfile } } : {}),
    permissions: {
      allow: [...DEFAULT_PERMISSIONS.allow],
      ask: [...new Set([...DEFAULT_PERMISSIONS.ask, ...(file.permissions?.ask ?? [])])],
      deny: [...(file.permissions?.deny ?? [])],
    },
  };
}
