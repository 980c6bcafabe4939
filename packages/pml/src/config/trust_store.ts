/**
 * The trust store (DESIGN §13 "Workspace trust"): `~/.pml/trusted.json`, the SHA-256 of the exact
 * `.pml.json` content a human trusted, per workspace real path. It lives in PML's home, outside
 * every workspace, and no sandbox sees that folder (their `HOME` is private, their writes stop at
 * the workspace and grants). Written atomically; only `pml trust`, `pml init` and `pml`'s own writes
 * of `.pml.json` on a human's decision change it.
 *
 * @module
 */
import { join } from "node:path";
import { PmlError } from "../errors.ts";
import { sha256Hex, sha256HexAsync } from "../sha256.ts";
import { writeFileAtomic } from "./write_json.ts";

/** The store's file name, in PML's home. */
export const TRUST_FILE = "trusted.json";

/** One trusted workspace. */
export interface TrustedEntry {
  /** SHA-256 hex of the `.pml.json` bytes the human trusted. */
  readonly sha256: string;
  readonly trustedAt: string;
  /**
   * The trusted text itself: a later hand edit is compared with it, so that one that only narrows
   * keeps the trust (`trusted_edit.ts`). Absent in entries written before it was kept.
   */
  readonly content?: string;
}

interface TrustFile {
  version: 1;
  workspaces: Record<string, TrustedEntry>;
}

/** SHA-256 hex of a `.pml.json` text (its UTF-8 bytes), as the store keeps it. */
export function contentHash(text: string): string {
  return sha256Hex(text);
}

/** As {@link contentHash}, with Web Crypto: what `pml stdio`'s start uses (`../sha256.ts`). */
export function contentHashAsync(text: string): Promise<string> {
  return sha256HexAsync(text);
}

/** Path of the trust store under `pmlHome`. */
export function trustStorePath(pmlHome: string): string {
  return join(pmlHome, TRUST_FILE);
}

/** The trusted workspaces (empty when the store does not exist or cannot be read). */
export function readTrusted(pmlHome: string): Record<string, TrustedEntry> {
  let raw: unknown;
  try {
    raw = JSON.parse(Deno.readTextFileSync(trustStorePath(pmlHome)));
  } catch {
    return {}; // none, or unreadable: nothing is trusted
  }
  const workspaces = (raw as Partial<TrustFile>)?.workspaces;
  if (!workspaces || typeof workspaces !== "object") return {};
  const out: Record<string, TrustedEntry> = {};
  for (const [ws, e] of Object.entries(workspaces)) {
    if (typeof e?.sha256 === "string" && /^[0-9a-f]{64}$/.test(e.sha256)) out[ws] = e;
  }
  return out;
}

/** Whether a human trusted exactly `text` as the `.pml.json` of `workspace`. */
export function isTrusted(pmlHome: string, workspace: string, text: string): boolean {
  return isTrustedHash(pmlHome, workspace, contentHash(text));
}

/** Whether a human trusted the `.pml.json` content of SHA-256 hex `sha256` for `workspace`. */
export function isTrustedHash(pmlHome: string, workspace: string, sha256: string): boolean {
  return readTrusted(pmlHome)[workspace]?.sha256 === sha256;
}

function changed(
  pmlHome: string,
  change: (workspaces: Record<string, TrustedEntry>) => void,
): string {
  const workspaces = readTrusted(pmlHome);
  change(workspaces);
  const file: TrustFile = { version: 1, workspaces };
  return JSON.stringify(file, null, 2) + "\n";
}

async function update(
  pmlHome: string,
  change: (workspaces: Record<string, TrustedEntry>) => void,
): Promise<void> {
  try {
    await writeFileAtomic(trustStorePath(pmlHome), changed(pmlHome, change));
  } catch (err) {
    throw new PmlError(
      "TRUST_STORE",
      `Cannot write the trust store "${trustStorePath(pmlHome)}": ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/**
 * Records that a human trusted `text` as the `.pml.json` of `workspace` (its real path). Callers:
 * `pml trust` after the human said yes, `pml init` for the file it wrote, and every write of
 * `.pml.json` by `pml` on a human's decision (see {@link keepTrusted}).
 */
export async function trustContent(pmlHome: string, workspace: string, text: string) {
  await trustHash(pmlHome, workspace, contentHash(text), text);
}

/**
 * As {@link trustContent}, for the content whose SHA-256 hex is `sha256` (what was shown), with
 * that content's text when the caller has it.
 */
export async function trustHash(
  pmlHome: string,
  workspace: string,
  sha256: string,
  content?: string,
) {
  await update(pmlHome, (w) => {
    w[workspace] = { sha256, trustedAt: new Date().toISOString(), ...(content ? { content } : {}) };
  });
}

/** The `.pml.json` text a human last trusted for `workspace`, when the store kept it. */
export function trustedContent(pmlHome: string, workspace: string): string | undefined {
  const content = readTrusted(pmlHome)[workspace]?.content;
  return typeof content === "string" ? content : undefined;
}

/**
 * As {@link trustContent}, synchronously, for set-up code that cannot wait (the test helpers that
 * stand for a human who ran `pml trust`).
 */
export function trustContentSync(pmlHome: string, workspace: string, text: string): void {
  Deno.mkdirSync(pmlHome, { recursive: true });
  const tmp = `${trustStorePath(pmlHome)}.${crypto.randomUUID()}.tmp`;
  Deno.writeTextFileSync(
    tmp,
    changed(pmlHome, (w) => {
      w[workspace] = {
        sha256: contentHash(text),
        trustedAt: new Date().toISOString(),
        content: text,
      };
    }),
  );
  Deno.renameSync(tmp, trustStorePath(pmlHome));
}

/** Forgets `workspace`; true when it was trusted. */
export async function untrustWorkspace(pmlHome: string, workspace: string): Promise<boolean> {
  if (!readTrusted(pmlHome)[workspace]) return false;
  await update(pmlHome, (w) => delete w[workspace]);
  return true;
}

/**
 * After `pml` itself rewrote the `.pml.json` of `workspace` from `before` to `after` (the "always"
 * answer, `pml import`): the new content stays trusted when the old one was (or there was no file,
 * or `beforeWasInEffect` says it needed no trust). A file that was not trusted stays untrusted: the
 * human's one decision does not vouch for the rest of it.
 */
export async function keepTrusted(
  pmlHome: string,
  workspace: string,
  before: string | undefined,
  after: string,
  beforeWasInEffect = false,
): Promise<void> {
  if (before === undefined || beforeWasInEffect || isTrusted(pmlHome, workspace, before)) {
    await trustContent(pmlHome, workspace, after);
  }
}
