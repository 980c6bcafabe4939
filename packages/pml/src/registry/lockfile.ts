/**
 * The integrity lockfile `.pml/mcp.lock` (DESIGN §7, §12):
 * `{"version":1,"entries":{"<4-part name>":{"fqdn","integrity","type","routing","fetchedAt"}}}`,
 * plus, for stdio servers, the pinned npm `package` (name, version, sha512); for http servers the
 * `proxyTo` target and declared `envRequired`; and for both the `tools` map: tool name → SHA-256 of
 * its definition (name, description, input schema), see `mcp_pins.ts`.
 *
 * Loaded once per session; entries no longer matched by `allow`/`ask`, and entries no call has
 * checked for 90 days (configurable), are dropped on load (the next use fetches and records them
 * again), except those of a server `.pml.json` configures (`private_mcps`): their pins stay
 * whatever `allow`/`ask` say and however long they were not used (docs/lockfile.md). Writes are atomic and serialised. A lockfile that does
 * not parse is reported (`LOCKFILE_CORRUPT`), never silently replaced.
 *
 * @module
 */
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../config/write_json.ts";
import { DEFAULT_LOCK_MAX_AGE_DAYS } from "../config/defaults.ts";
import { PmlError } from "../errors.ts";
import { matchesPattern, type Permissions } from "../permission/patterns.ts";
import { parseFqdn } from "./fqdn.ts";

/** Path of the lockfile in `workspace`. */
export function lockfilePath(workspace: string): string {
  return join(workspace, ".pml", "mcp.lock");
}

/**
 * The lockfile's schemas, built on first use: a `pml stdio` start without a lockfile reads none,
 * and building them took ~1.5 ms of it (docs/speed.md, "Cold start").
 */
function buildSchemas() {
  const entry = z.object({
    fqdn: z.string(),
    integrity: z.string().regex(/^sha256-[A-Za-z0-9+/]{43}=$/, "an sha256-<base64> integrity"),
    type: z.enum(["deno", "stdio", "http"]),
    routing: z.enum(["client", "server"]),
    fetchedAt: z.string(),
    /** When a call last found the pinned bytes unchanged (registry or verified cache): `open`. */
    checkedAt: z.string().optional(),
    /** stdio: the pinned npm package (`integrity` left out only by a dev `private_mcps` entry). */
    package: z.object({ name: z.string(), version: z.string(), integrity: z.string().optional() })
      .optional(),
    /** http: where the server proxies calls, and the variables the MCP declares. */
    proxyTo: z.string().optional(),
    envRequired: z.array(z.string()).optional(),
    /** Tool name → `sha256-<base64>` of its definition, pinned when first used. */
    tools: z.record(z.string(), z.string()).optional(),
  });
  return { entry, file: z.object({ version: z.literal(1), entries: z.record(z.string(), entry) }) };
}

let schemas: ReturnType<typeof buildSchemas> | undefined;
const lockSchemas = () => schemas ??= buildSchemas();

/** One pinned registry entry. */
export type LockEntry = z.infer<ReturnType<typeof buildSchemas>["entry"]>;

/**
 * True when `permissions` still name the entry `name`: a deno entry by its tool id
 * (`namespace:action`), a stdio/http server (`pml.mcp.<server>.server`) by any pattern of its
 * namespace.
 */
export function lockEntryKept(
  name: string,
  type: LockEntry["type"],
  permissions: Permissions,
): boolean {
  const { namespace, action } = parseFqdn(name);
  const patterns = [...permissions.allow, ...permissions.ask];
  if (type === "deno") return patterns.some((p) => matchesPattern(p, `${namespace}:${action}`));
  return patterns.some((p) => p === "*" || p.split(":")[0] === namespace);
}

/** True for the stdio or http entry (`pml.mcp.<ns>.server`) of a configured namespace. */
function configuredEntry(
  name: string,
  type: LockEntry["type"],
  configured: ReadonlySet<string> | undefined,
): boolean {
  if (!configured?.size || type === "deno") return false;
  const [pml, mcp, ns, server, ...rest] = name.split(".");
  return pml === "pml" && mcp === "mcp" && server === "server" && !rest.length &&
    configured.has(ns);
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** How the clean-up on load judges entries. */
export interface LockCleanup {
  /** `.pml.json` permissions: entries they no longer name are dropped. */
  readonly permissions?: Permissions;
  /**
   * Namespaces of the servers `.pml.json` configures (`private_mcps`): their entries are never
   * dropped, since a pin dropped is a pin taken again silently from whatever the server says then.
   */
  readonly configured?: ReadonlySet<string>;
  /** Days since an entry was last checked (or fetched) before it is dropped; 0: never. */
  readonly maxAgeDays?: number;
  readonly now?: number;
}

/** The lockfile of one workspace. Use {@link Lockfile.open}. */
export class Lockfile {
  readonly path: string;
  /** Names dropped by the clean-up on load because the permissions no longer name them. */
  readonly dropped: readonly string[];
  /** Names dropped on load because no call checked them for `maxAgeDays`. */
  readonly stale: readonly string[];
  #entries: Map<string, LockEntry>;
  #chain: Promise<void> = Promise.resolve();

  private constructor(
    path: string,
    entries: Map<string, LockEntry>,
    dropped: string[],
    stale: string[],
  ) {
    this.path = path;
    this.#entries = entries;
    this.dropped = dropped;
    this.stale = stale;
  }

  /**
   * Reads the lockfile (an absent one is empty), drops entries the permissions no longer name and
   * entries no call has checked for `maxAgeDays` (default {@link DEFAULT_LOCK_MAX_AGE_DAYS}), and
   * saves the result if anything was dropped. A pin in use is checked on each call (its bytes
   * against the registry's answer or the verified cache), which moves its `checkedAt`, so only
   * pins nobody used for that long go; their next use fetches and pins them again.
   *
   * @throws {PmlError} `LOCKFILE_CORRUPT` when the file is not a valid lockfile.
   */
  static async open(workspace: string, cleanup: LockCleanup = {}): Promise<Lockfile> {
    const path = lockfilePath(workspace);
    const entries = await readEntries(path);
    const dropped: string[] = [];
    const stale: string[] = [];
    const { permissions, maxAgeDays = DEFAULT_LOCK_MAX_AGE_DAYS, now = Date.now() } = cleanup;
    for (const [name, entry] of entries) {
      if (configuredEntry(name, entry.type, cleanup.configured)) continue;
      let kept = true;
      if (permissions) {
        try {
          kept = lockEntryKept(name, entry.type, permissions);
        } catch {
          kept = false; // an unparsable key is not kept
        }
      }
      if (!kept) dropped.push(name);
      else if (maxAgeDays > 0 && !(now - lastChecked(entry) <= maxAgeDays * DAY_MS)) {
        stale.push(name);
      }
    }
    for (const name of [...dropped, ...stale]) entries.delete(name);
    const lock = new Lockfile(path, entries, dropped, stale);
    if (dropped.length || stale.length) await lock.#save();
    return lock;
  }

  /**
   * Notes that a call found the pin of `name` unchanged at `now`. Saved at most once a day per
   * entry, so that calls do not rewrite the lockfile.
   */
  async markChecked(name: string, now: number): Promise<void> {
    const entry = this.#entries.get(name);
    if (!entry || now - lastChecked(entry) < DAY_MS) return;
    this.#entries.set(name, { ...entry, checkedAt: new Date(now).toISOString() });
    await this.#save();
  }

  /** Reads without cleaning or writing (for `pml status`). */
  static async read(workspace: string): Promise<Lockfile> {
    const path = lockfilePath(workspace);
    return new Lockfile(path, await readEntries(path), [], []);
  }

  get(name: string): LockEntry | undefined {
    return this.#entries.get(name);
  }

  /** All entries, sorted by name. */
  entries(): [string, LockEntry][] {
    return [...this.#entries].sort(([a], [b]) => (a < b ? -1 : 1));
  }

  /** Records (or replaces) the entry of `name` and saves. */
  async record(name: string, entry: LockEntry): Promise<void> {
    this.#entries.set(name, lockSchemas().entry.parse(entry));
    await this.#save();
  }

  #save(): Promise<void> {
    const run = async () => {
      const file = { version: 1, entries: Object.fromEntries(this.entries()) };
      await writeFileAtomic(this.path, JSON.stringify(file, null, 2) + "\n");
    };
    const next = this.#chain.then(run, run);
    this.#chain = next.catch(() => {});
    return next;
  }
}

/** When the entry was last checked or fetched (epoch ms; NaN for an unreadable date: stale). */
function lastChecked(entry: LockEntry): number {
  return Date.parse(entry.checkedAt ?? entry.fetchedAt);
}

async function readEntries(path: string): Promise<Map<string, LockEntry>> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return new Map();
    throw new PmlError(
      "LOCKFILE_CORRUPT",
      `Cannot read the lockfile "${path}": ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  let problem: string;
  try {
    const parsed = lockSchemas().file.safeParse(JSON.parse(text));
    if (parsed.success) return new Map(Object.entries(parsed.data.entries));
    const issue = parsed.error.issues[0];
    problem = `field "${issue.path.join(".") || "(top level)"}": ${issue.message}`;
  } catch (err) {
    problem = `not valid JSON (${(err as Error).message})`;
  }
  throw new PmlError(
    "LOCKFILE_CORRUPT",
    `The lockfile "${path}" is corrupt: ${problem}. It was left as is; fix it, or delete it to pin every registry MCP again on next use`,
    { details: { path } },
  );
}
