/**
 * Where the sign-ins of remote servers live (docs/security.md, "Sign-in tokens"): one file per
 * server and resource under PML's home (`~/.pml/oauth/<server>-<hash>.json`), folder 0700 and
 * files 0600, never in a workspace. Every sandbox hides PML's home (`sandbox/policy.ts`
 * `HOME_SECRETS`), so no tool, dependency or `pml:execute` code reads them under any grant.
 *
 * The file holds what the SDK's client auth saves (client registration, tokens, discovery) and
 * what the human channels show (`pml auth --list`, `pml status`): the server is waiting for its
 * user, since when, with which scope. Only `pml` reads it; nothing of it goes into a result, an
 * error, the audit log or a log line but the names below marked as such.
 *
 * @module
 */
import { join } from "node:path";
import type { OAuthDiscoveryState } from "../sdk/client_auth.ts";
import type { OAuthClientInformationMixed, OAuthTokens } from "../sdk/shared_auth.ts";

/** One server's sign-in, as stored. */
export interface SignInRecord {
  /** The `private_mcps` name (shown). */
  readonly server: string;
  /** The MCP server's URL: the resource the tokens are for (shown). */
  readonly resource: string;
  readonly clientInformation?: OAuthClientInformationMixed;
  readonly tokens?: OAuthTokens;
  /** When the tokens were saved (ms since the epoch; shown), for their expiry. */
  readonly tokensSavedAt?: number;
  readonly discoveryState?: OAuthDiscoveryState;
  /** Since when the server waits for its user to sign in (shown), and the scope it asked. */
  readonly waitingSince?: number;
  readonly waitingScope?: string;
}

/** The shown part of a record: no token, no client secret. */
export interface SignInSummary {
  readonly server: string;
  readonly resource: string;
  readonly signedIn: boolean;
  readonly scope?: string;
  /** When the access token expires (ms since the epoch), if it said. */
  readonly expiresAt?: number;
  readonly refreshable: boolean;
  readonly waitingSince?: number;
}

/** The sign-in files under `pmlHome`. */
export class SignInStore {
  readonly dir: string;

  constructor(pmlHome: string) {
    this.dir = join(pmlHome, "oauth");
  }

  /** The file of `server` at `resource`: the name for reading, a hash for the URL. */
  async path(server: string, resource: string): Promise<string> {
    const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(resource));
    const hex = Array.from(
      new Uint8Array(digest).slice(0, 8),
      (b) => b.toString(16).padStart(2, "0"),
    )
      .join("");
    return join(this.dir, `${server.replace(/[^A-Za-z0-9_.-]/g, "_")}-${hex}.json`);
  }

  async read(server: string, resource: string): Promise<SignInRecord | undefined> {
    try {
      const record = JSON.parse(await Deno.readTextFile(await this.path(server, resource)));
      return record?.server === server && record?.resource === resource ? record : undefined;
    } catch (err) {
      if (err instanceof Deno.errors.NotFound || err instanceof SyntaxError) return undefined;
      throw err;
    }
  }

  /** Applies `change` to the record (created when missing) and writes it, 0600, atomically. */
  async update(
    server: string,
    resource: string,
    change: (record: SignInRecord) => SignInRecord,
  ): Promise<SignInRecord> {
    const now = await this.read(server, resource) ?? { server, resource };
    const next = { ...change(now), server, resource };
    await Deno.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = await this.path(server, resource);
    const tmp = join(this.dir, `.${crypto.randomUUID()}.tmp`);
    try {
      await Deno.writeTextFile(tmp, JSON.stringify(next, null, 2) + "\n", { mode: 0o600 });
      await Deno.chmod(tmp, 0o600); // whatever the umask
      await Deno.rename(tmp, file);
    } catch (err) {
      await Deno.remove(tmp).catch(() => {});
      throw err;
    }
    return next;
  }

  async remove(server: string, resource: string): Promise<boolean> {
    try {
      await Deno.remove(await this.path(server, resource));
      return true;
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return false;
      throw err;
    }
  }

  /** Every stored record (for `pml auth --list` and `pml status`). */
  async list(): Promise<SignInRecord[]> {
    const out: SignInRecord[] = [];
    try {
      for await (const entry of Deno.readDir(this.dir)) {
        if (!entry.isFile || !entry.name.endsWith(".json")) continue;
        try {
          out.push(JSON.parse(await Deno.readTextFile(join(this.dir, entry.name))));
        } catch { /* a file being replaced, or not ours */ }
      }
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    return out.sort((a, b) => a.server.localeCompare(b.server));
  }
}

/**
 * The remote servers of `mcps` (URL by name) that wait for their user to sign in, from the files
 * under `pmlHome` (synchronous, for `pml status`).
 */
export function waitingSync(
  pmlHome: string,
  mcps: Readonly<Record<string, string>>,
): { server: string; since: number }[] {
  const out: { server: string; since: number }[] = [];
  let entries: Deno.DirEntry[] = [];
  try {
    entries = [...Deno.readDirSync(join(pmlHome, "oauth"))];
  } catch { /* nothing stored */ }
  for (const entry of entries) {
    if (!entry.isFile || !entry.name.endsWith(".json")) continue;
    try {
      const r: SignInRecord = JSON.parse(Deno.readTextFileSync(join(pmlHome, "oauth", entry.name)));
      if (r.waitingSince !== undefined && mcps[r.server] === r.resource) {
        out.push({ server: r.server, since: r.waitingSince });
      }
    } catch { /* a file being replaced */ }
  }
  return out.sort((a, b) => a.server.localeCompare(b.server));
}

/** What may be shown of `record`. */
export function summary(record: SignInRecord): SignInSummary {
  const tokens = record.tokens;
  const expiresAt = tokens?.expires_in !== undefined && record.tokensSavedAt !== undefined
    ? record.tokensSavedAt + tokens.expires_in * 1000
    : undefined;
  return {
    server: record.server,
    resource: record.resource,
    signedIn: tokens !== undefined,
    ...(tokens?.scope ? { scope: tokens.scope } : {}),
    ...(expiresAt !== undefined ? { expiresAt } : {}),
    refreshable: tokens?.refresh_token !== undefined,
    ...(record.waitingSince !== undefined ? { waitingSince: record.waitingSince } : {}),
  };
}
