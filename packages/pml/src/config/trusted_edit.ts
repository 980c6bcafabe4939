/**
 * A hand edit of a `.pml.json` a human trusted before (DESIGN §13 "Workspace trust";
 * docs/permissions.md): the new content is compared with the trusted one (kept in the trust
 * store), not with the built-in defaults. An edit that widens nothing beyond the trusted content
 * (it removes or narrows) keeps the trust; one that widens applies without its new widenings,
 * which wait for `pml trust` and are named in every result PML refuses or asks.
 *
 * @module
 */
import { within } from "./control_files.ts";
import { DEFAULT_CLOUD_URL, DEFAULT_LOCK_MAX_AGE_DAYS, FILESYSTEM_READ_TOOLS } from "./defaults.ts";
import type { PmlFile } from "./schema.ts";
import { wideningOf } from "./widening.ts";
import { realOrResolved } from "./workspace.ts";

const READS: ReadonlySet<string> = new Set(FILESYSTEM_READ_TOOLS);

/** What an edit of a trusted file widens, and the file as it applies until a human trusts it. */
export interface TrustedEdit {
  /** What the edit widens beyond the trusted content, one line each (empty: it keeps the trust). */
  readonly held: string[];
  /** The edited file without `held` (from its expanded form); `undefined` when `held` is empty. */
  readonly file?: PmlFile;
}

/**
 * Compares `written` (the edited file as written) with `trusted` (the content a human trusted, as
 * written) in `folder`; `expanded` is the edited file with its variables, what applies. `undefined`
 * when the edit cannot be limited safely (a new `${VAR}`, or a widening this comparison does not
 * know how to take out): the whole file then waits, as an untrusted one.
 *
 * @example
 * ```ts
 * trustedEdit(edited, edited, before, "/home/a/proj")?.held; // [] when the edit only narrows
 * ```
 */
export function trustedEdit(
  written: PmlFile,
  expanded: PmlFile,
  trusted: PmlFile,
  folder: string,
): TrustedEdit | undefined {
  const before = new Set(wideningOf(trusted, folder));
  const held = [
    ...wideningOf(written, folder).filter((line) => !before.has(line)),
    ...Object.keys(written.private_mcps ?? {})
      .filter((name) => trusted.private_mcps?.[name] && !sameMcp(written, trusted, name))
      .map((name) => `private_mcps.${name} (changed since it was trusted)`),
  ];
  if (held.length === 0) return { held };
  // Only what the trusted content already held is kept; checked on the file as written.
  const left = wideningOf(limitedTo(written, written, trusted, folder), folder);
  if (left.some((line) => !before.has(line))) return undefined;
  return { held, file: limitedTo(expanded, written, trusted, folder) };
}

function sameMcp(a: PmlFile, b: PmlFile, name: string): boolean {
  return JSON.stringify(a.private_mcps?.[name]) === JSON.stringify(b.private_mcps?.[name]);
}

/**
 * `file` (the edited file, as written or expanded: the same shape) without what `written` widens
 * beyond `trusted`: entries are judged on `written`, index by index, and taken from `file`.
 */
function limitedTo(
  file: PmlFile,
  written: PmlFile,
  trusted: PmlFile,
  folder: string,
): PmlFile {
  const real = (p: string) => realOrResolved(folder, p);
  const kept = <T>(
    from: readonly T[] | undefined,
    judged: readonly T[] | undefined,
    ok: (v: T) => boolean,
  ): T[] | undefined => from && judged ? from.filter((_, i) => ok(judged[i])) : from && [...from];
  const grants = (kind: "read" | "write") => {
    const before = new Set((trusted.sandbox?.[kind] ?? []).map(real));
    return kept(
      file.sandbox?.[kind],
      written.sandbox?.[kind],
      (p) => within(real(p), folder) || before.has(real(p)),
    );
  };
  const allowBefore = new Set(trusted.permissions?.allow ?? []);
  const out: PmlFile = { ...file };
  if (file.permissions) {
    out.permissions = {
      ...file.permissions,
      allow: kept(
        file.permissions.allow,
        written.permissions?.allow,
        (p) => READS.has(p) || allowBefore.has(p),
      )!,
    };
  }
  if (written.approvals === "agent" && trusted.approvals !== "agent") delete out.approvals;
  if (file.sandbox) {
    const net = new Set(trusted.sandbox?.net ?? []);
    out.sandbox = {
      ...file.sandbox,
      read: grants("read"),
      write: grants("write"),
      net: kept(file.sandbox.net, written.sandbox?.net, (h) => net.has(h)),
      unconfined: file.sandbox.unconfined && trusted.sandbox?.unconfined ? true : undefined,
      sshAgent: file.sandbox.sshAgent && trusted.sandbox?.sshAgent ? true : undefined,
    };
  }
  if (file.private_mcps) {
    out.private_mcps = Object.fromEntries(
      Object.entries(file.private_mcps).filter(([name]) => sameMcp(written, trusted, name)),
    );
  }
  const registries = new Set(trusted.registries ?? []);
  out.registries = kept(file.registries, written.registries, (u) => registries.has(u));
  const env = new Set(trusted.env ?? []);
  out.env = kept(file.env, written.env, (n) => env.has(n));
  if (
    written.workspace !== undefined && !within(real(written.workspace), folder) &&
    written.workspace !== trusted.workspace
  ) delete out.workspace;
  if (
    written.cloudUrl !== undefined && written.cloudUrl.replace(/\/+$/, "") !== DEFAULT_CLOUD_URL &&
    written.cloudUrl !== trusted.cloudUrl
  ) delete out.cloudUrl;
  const days = written.lockfile?.maxAgeDays;
  if (
    days !== undefined && days !== 0 && days < DEFAULT_LOCK_MAX_AGE_DAYS &&
    days !== trusted.lockfile?.maxAgeDays
  ) delete out.lockfile;
  return out;
}
