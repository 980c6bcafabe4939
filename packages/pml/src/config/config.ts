import { join } from "node:path";
import { PmlError } from "../errors.ts";
import type { Permissions } from "../permission/patterns.ts";
import {
  DEFAULT_CLOUD_URL,
  DEFAULT_LOCK_MAX_AGE_DAYS,
  DEFAULT_PERMISSIONS,
  DEFAULT_PORT,
  METADATA_PLACEHOLDERS,
} from "./defaults.ts";
import { type PmlFile, pmlSchemas, type PrivateMcp } from "./schema.ts";
import { readApiKey } from "./credentials.ts";
import { within } from "./control_files.ts";
import { byokValues } from "./dotenv.ts";
import { requireSecureUrl } from "./secure_url.ts";
import { realOrResolved, resolveWorkspace, type WorkspaceSource } from "./workspace.ts";
import { contentHash, contentHashAsync, isTrustedHash, trustedContent } from "./trust_store.ts";
import { trustedEdit } from "./trusted_edit.ts";
import { narrowedFile, wideningOf } from "./widening.ts";

/** The config file name, in the workspace. */
export const CONFIG_FILE = ".pml.json";

/** Everything the program needs to know about its setting, parsed once. Nothing deeper reads env. */
export interface Config {
  /** Absolute real path of the workspace. */
  readonly workspace: string;
  readonly workspaceSource: WorkspaceSource;
  /** Warning to show on stderr (cwd fallback), if any. */
  readonly workspaceWarning?: string;
  /** Path of `.pml.json`, whether or not it exists. */
  readonly configPath: string;
  /** True when `.pml.json` exists (then its permissions are the only source of truth). */
  readonly hasConfigFile: boolean;
  readonly cloudUrl: string;
  /** `PML_API_KEY`, or the key stored by `pml init`. Never logged, never passed to sandboxes or subprocesses. */
  readonly apiKey?: string;
  readonly permissions: Permissions;
  /** True when `permissions` come from `.pml.json`; false when the built-in defaults apply. */
  readonly permissionsFromFile: boolean;
  readonly privateMcps: Readonly<Record<string, PrivateMcp>>;
  readonly registries: readonly string[];
  /** Names of BYOK variables the user makes available to cloud tools. */
  readonly byokEnv: readonly string[];
  /**
   * Their values: from the environment, else from the workspace `.env` (`dotenv.ts`). Only names
   * of `byokEnv`; what cloud BYOK, sampling and stdio dependencies read keys from.
   */
  readonly byokValues: Readonly<Record<string, string>>;
  /** Extra sandbox grants (absolute real paths; net hosts). */
  readonly sandbox: {
    readonly read: readonly string[];
    readonly write: readonly string[];
    readonly net: readonly string[];
    /** Paths hidden from every sandbox besides the built-in secrets (absolute real paths). */
    readonly deny: readonly string[];
    /** `shell:exec` may use the SSH agent of `SSH_AUTH_SOCK` (off by default). */
    readonly sshAgent: boolean;
    /**
     * Run `shell:exec` even where no OS sandbox (bubblewrap) is available, with Deno's flags as
     * the only wall. Off by default; `pml status` and every such call's result say so.
     */
    readonly unconfined: boolean;
  };
  readonly port: number;
  /** Days without a use after which a lockfile pin is dropped on load (0: never; default 90). */
  readonly lockMaxAgeDays: number;
  /**
   * Who answers an approval the client did not elicit: `agent` (`pml:continue` decides), `human`
   * (only the approval page or `pml approve`), or unset: human for shell, writes, installs and
   * the tools of MCP servers not pinned read-only, agent for the rest (docs/approvals.md).
   */
  readonly approvals?: "agent" | "human";
  /** Whether `.pml.json` applies beyond the built-in defaults (DESIGN §13 "Workspace trust"). */
  readonly trust: WorkspaceTrust;
  /**
   * `desktop`: a waiting human approval is also announced with `notify-send` (with a one-time
   * link). `PML_NOTIFY` or `.pml.json` `notify`; default `off` (docs/approvals.md).
   */
  readonly notify: "desktop" | "off";
  /** `~/.pml`: Deno module cache (`DENO_DIR`), routing cache, trust store. */
  readonly pmlHome: string;
  /** The environment snapshot, for BYOK look-ups and dependency env. */
  readonly env: Readonly<Record<string, string>>;
}

/**
 * The trust state of a workspace's `.pml.json`: `none` (no file), `narrow` (it widens nothing and
 * applies as it is), `trusted` (a human trusted this exact content), `untrusted` (it widens and
 * nobody trusted it: PML runs on the built-in defaults plus the file's `deny` and `ask` entries).
 */
export interface WorkspaceTrust {
  readonly state: "none" | "narrow" | "trusted" | "untrusted";
  /** What the file widens beyond the defaults, one line each (empty for `none` and `narrow`). */
  readonly widens: readonly string[];
  /** The folder holding `.pml.json` (real path): the trust store's key. */
  readonly folder: string;
  /** SHA-256 hex of the file's bytes, when there is a file. */
  readonly hash?: string;
  /**
   * The file is a hand edit of content a human trusted (`trusted_edit.ts`): `trusted`, it widens
   * nothing beyond that content; `untrusted`, `widens` is what the edit adds, and the file applies
   * without it (`edit`) until a human runs `pml trust`.
   */
  readonly edited?: boolean;
  /** The edited file as it applies meanwhile (expanded, without what waits). */
  readonly edit?: PmlFile;
}

/**
 * What PML says wherever an untrusted `.pml.json` changed the outcome (stderr at start, `pml
 * status`, results it refuses or asks); `undefined` when the file applies.
 */
export function trustNotice(config: Pick<Config, "trust" | "configPath">): string | undefined {
  if (config.trust.state !== "untrusted") return undefined;
  if (config.trust.edit) {
    return `This workspace's .pml.json changed since a human trusted it, and the change widens: ${
      config.trust.widens.join("; ")
    }. That waits for a human to run \`pml trust\` in a terminal in ${config.trust.folder}; ` +
      `the rest of the file applies as trusted.`;
  }
  return `This workspace's .pml.json is not trusted, so PML runs on the built-in defaults ` +
    `(reads allowed; writes, shell and installs asked) plus its deny and ask entries; it widens: ` +
    `${
      config.trust.widens.join("; ")
    }. A human applies it by running \`pml trust\` in a terminal ` +
    `in ${config.trust.folder}.`;
}

export { METADATA_PLACEHOLDERS };

/**
 * Expands `${VAR}` from `env` in every string of a JSON value; unset variables are an error. The
 * {@link METADATA_PLACEHOLDERS} are no variables: kept under `private_mcps`, refused elsewhere.
 */
export function expandEnv(value: unknown, env: Readonly<Record<string, string>>, at = ""): unknown {
  if (typeof value === "string") {
    return value.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (whole, name: string) => {
      if (METADATA_PLACEHOLDERS.has(name)) {
        if (at === "private_mcps" || at.startsWith("private_mcps.")) return whole;
        throw new PmlError(
          "CONFIG_INVALID",
          `${at || "value"}: ${whole} is a registry metadata placeholder, not an environment ` +
            `variable; it is expanded only inside private_mcps (where PML launches the server)`,
        );
      }
      const v = env[name];
      if (v === undefined) {
        throw new PmlError(
          "CONFIG_INVALID",
          `${at || "value"}: environment variable "${name}" is not set (referenced as \${${name}})`,
        );
      }
      return v;
    });
  }
  if (Array.isArray(value)) return value.map((v, i) => expandEnv(v, env, `${at}[${i}]`));
  if (value && typeof value === "object") {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, expandEnv(v, env, at ? `${at}.${k}` : k)]),
    );
  }
  return value;
}

/** Parses the text of a `.pml.json`; errors name the file, the field and what was expected. */
export function parsePmlFile(
  text: string,
  path: string,
  env: Readonly<Record<string, string>>,
): PmlFile {
  return readPmlFile(text, path, env).expanded;
}

/**
 * A `.pml.json` parsed once, two ways: `expanded` (its `${VAR}` replaced from the environment: what
 * applies once a human trusted it) and `written` (the same value with every string as written, no
 * variable expanded: what is judged and shown while nobody trusted it). The expansion checks the
 * file's shape (its error messages quote no value); nothing of `expanded` is used or shown unless
 * the file applies.
 */
export function readPmlFile(
  text: string,
  path: string,
  env: Readonly<Record<string, string>>,
): { readonly expanded: PmlFile; readonly written: PmlFile } {
  let raw: unknown;
  try {
    // Editors on Windows save "UTF-8 with BOM"; the mark is no JSON, the content is.
    raw = JSON.parse(text.startsWith("\uFEFF") ? text.slice(1) : text);
  } catch (err) {
    throw new PmlError(
      "CONFIG_INVALID",
      `Invalid ${path}: not valid JSON (${(err as Error).message})`,
    );
  }
  let expanded: unknown;
  try {
    expanded = expandEnv(raw, env);
  } catch (err) {
    throw new PmlError("CONFIG_INVALID", `Invalid ${path}: ${(err as Error).message}`);
  }
  // zod's reference path, not its compiled one: compiling an object's parser (`new Function`) pays
  // from the second parse on, and a process parses `.pml.json` once (~1.5 ms of the start saved).
  const parsed = pmlSchemas().PmlFileSchema.safeParse(expanded, { jitless: true });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue.path.length ? issue.path.join(".") : "(top level)";
    throw new PmlError(
      "CONFIG_INVALID",
      `Invalid ${path}: field "${field}": ${issue.message}`,
      { details: { field, issues: parsed.error.issues } },
    );
  }
  return { expanded: parsed.data, written: asWritten(parsed.data, raw) as PmlFile };
}

/** `parsed` (with the schema's defaults) with each string put back as `raw` has it, unexpanded. */
function asWritten(parsed: unknown, raw: unknown): unknown {
  if (typeof raw === "string") return raw;
  if (Array.isArray(parsed) && Array.isArray(raw)) {
    return parsed.map((value, i) => asWritten(value, raw[i]));
  }
  if (isRecord(parsed) && isRecord(raw)) {
    return Object.fromEntries(
      Object.entries(parsed).map(([k, v]) => [k, Object.hasOwn(raw, k) ? asWritten(v, raw[k]) : v]),
    );
  }
  return parsed;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function notifySetting(
  env: string | undefined,
  file: "desktop" | "off" | undefined,
): "desktop" | "off" {
  if (env === undefined || env === "") return file ?? "off";
  if (env === "desktop" || env === "off") return env;
  throw new PmlError(
    "CONFIG_INVALID",
    `PML_NOTIFY must be "desktop" or "off", not "${env}"`,
  );
}

/**
 * Refuses a `.pml.json` that is a symbolic link to a file outside the workspace, before reading it:
 * the file would configure PML from elsewhere, and a parse error would quote its bytes.
 */
function refuseOutsideLink(configPath: string, workspace: string): void {
  let isLink = false;
  try {
    isLink = Deno.lstatSync(configPath).isSymlink;
  } catch { /* no .pml.json */ }
  if (!isLink) return;
  let target: string | undefined;
  try {
    target = Deno.realPathSync(configPath);
  } catch { /* dangling: reading it finds nothing */ }
  if (target === undefined || within(target, workspace)) return;
  throw new PmlError(
    "CONFIG_INVALID",
    `Refusing ${configPath}: it is a symbolic link to "${target}", outside the workspace ` +
      `"${workspace}" (its content was not read); put the configuration in the workspace itself`,
  );
}

/**
 * Loads the configuration: resolves the workspace, reads `.pml.json` if present, applies defaults.
 *
 * @example
 * ```ts
 * const config = loadConfig({ env: Deno.env.toObject(), cwd: Deno.cwd(), home: "/home/a" });
 * ```
 */
export function loadConfig(opts: ConfigSources): Config {
  const read = readConfigFile(opts);
  return configOf(opts, read, read.text === undefined ? undefined : contentHash(read.text));
}

/**
 * As {@link loadConfig}, hashing `.pml.json` for the trust check with Web Crypto, so that
 * `pml stdio`'s start does not load `node:crypto` (docs/speed.md, "Cold start"). Same hash, same
 * result.
 */
export async function loadConfigAsync(opts: ConfigSources): Promise<Config> {
  const read = readConfigFile(opts);
  return configOf(
    opts,
    read,
    read.text === undefined ? undefined : await contentHashAsync(read.text),
  );
}

/** What a configuration is loaded from. */
export interface ConfigSources {
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly home?: string;
}

interface ConfigFileRead {
  readonly ws: ReturnType<typeof resolveWorkspace>;
  readonly configPath: string;
  /** The text of `.pml.json`; `undefined` when there is none. */
  readonly text?: string;
}

function readConfigFile(opts: ConfigSources): ConfigFileRead {
  const ws = resolveWorkspace(opts);
  const configPath = join(ws.path, CONFIG_FILE);
  refuseOutsideLink(configPath, ws.path);
  try {
    return { ws, configPath, text: Deno.readTextFileSync(configPath) };
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) {
      throw new PmlError("CONFIG_INVALID", `Cannot read ${configPath}: ${(err as Error).message}`);
    }
    return { ws, configPath };
  }
}

/** The configuration from `.pml.json`'s text (if any) and its SHA-256 hex `hash`. */
function configOf(opts: ConfigSources, read: ConfigFileRead, hash: string | undefined): Config {
  const { ws, configPath, text } = read;
  const parsed = text === undefined ? undefined : readPmlFile(text, configPath, opts.env);
  const pmlHome = pmlHomeOf(opts.env, opts.home ?? opts.env.HOME ?? ws.path);
  // Judged as written: a `${VAR}` widens (it reads the environment), and no value of one is quoted.
  const trust = workspaceTrust(hash, parsed, ws.path, pmlHome, (text) => {
    try {
      return readPmlFile(text, configPath, opts.env).written;
    } catch {
      return undefined; // trusted content that no longer loads vouches for nothing
    }
  });
  // Until a human trusted it, a file that widens applies only where it narrows, unexpanded; an
  // edit of trusted content applies without what it adds.
  const written: PmlFile = trust.state === "untrusted" ? parsed!.written : parsed?.expanded ?? {};
  const file = trust.edit ?? (trust.state === "untrusted" ? narrowedFile(written) : written);
  let workspace = ws.path;
  if (file.workspace && ws.source !== "env") workspace = realOrResolved(ws.path, file.workspace);
  const sandbox = file.sandbox ?? {};
  const cloudUrl = (opts.env.PML_CLOUD_URL || file.cloudUrl || DEFAULT_CLOUD_URL).replace(
    /\/+$/,
    "",
  );
  requireSecureUrl(cloudUrl, opts.env.PML_CLOUD_URL ? "PML_CLOUD_URL" : `${configPath}: cloudUrl`);
  // An untrusted file's URLs are checked as written where they name no variable (the others are
  // neither expanded nor used until a human trusts the file, and then checked expanded).
  const checked = (url: string) => trust.state !== "untrusted" || !url.includes("${");
  if (written.cloudUrl && checked(written.cloudUrl)) {
    requireSecureUrl(written.cloudUrl, `${configPath}: cloudUrl`);
  }
  (written.registries ?? []).forEach((url, i) =>
    checked(url) && requireSecureUrl(url, `${configPath}: registries[${i}]`)
  );
  return Object.freeze({
    workspace,
    workspaceSource: ws.source,
    workspaceWarning: ws.warning,
    configPath,
    hasConfigFile: text !== undefined,
    cloudUrl,
    apiKey: opts.env.PML_API_KEY || readApiKey(pmlHome),
    permissions: file.permissions
      ? Object.freeze({
        allow: [...file.permissions.allow],
        ask: [...file.permissions.ask],
        deny: [...file.permissions.deny],
      })
      : DEFAULT_PERMISSIONS,
    // An untrusted file's permissions are the defaults narrowed by its ask and deny entries.
    permissionsFromFile: file.permissions !== undefined &&
      (trust.state !== "untrusted" || trust.edit !== undefined),
    privateMcps: file.private_mcps ?? {},
    registries: file.registries ?? [],
    byokEnv: file.env ?? [],
    byokValues: byokValues(file.env ?? [], opts.env, workspace),
    sandbox: {
      read: (sandbox.read ?? []).map((p) => realOrResolved(workspace, p)),
      write: (sandbox.write ?? []).map((p) => realOrResolved(workspace, p)),
      net: sandbox.net ?? [],
      deny: (sandbox.deny ?? []).map((p) => realOrResolved(workspace, p)),
      sshAgent: sandbox.sshAgent ?? false,
      unconfined: sandbox.unconfined ?? false,
    },
    port: Number(opts.env.PML_PORT) || file.port || DEFAULT_PORT,
    lockMaxAgeDays: file.lockfile?.maxAgeDays ?? DEFAULT_LOCK_MAX_AGE_DAYS,
    approvals: file.approvals,
    trust,
    notify: notifySetting(opts.env.PML_NOTIFY, file.notify),
    pmlHome,
    env: opts.env,
  });
}

/** PML's home: `PML_HOME`, else `<home>/.pml`. */
export function pmlHomeOf(env: Readonly<Record<string, string>>, home: string): string {
  return env.PML_HOME || join(home, ".pml");
}

/**
 * `hash`: the SHA-256 hex of `.pml.json`, `undefined` when there is none; `parse` reads the
 * content a human trusted before (as written), for an edit of it.
 */
function workspaceTrust(
  hash: string | undefined,
  parsed: { readonly written: PmlFile; readonly expanded: PmlFile } | undefined,
  folder: string,
  pmlHome: string,
  parse: (text: string) => PmlFile | undefined,
): WorkspaceTrust {
  if (hash === undefined || !parsed) return { state: "none", widens: [], folder };
  const widens = wideningOf(parsed.written, folder);
  if (widens.length === 0) return { state: "narrow", widens, folder, hash };
  if (isTrustedHash(pmlHome, folder, hash)) return { state: "trusted", widens, folder, hash };
  const before = trustedContent(pmlHome, folder);
  const trusted = before === undefined ? undefined : parse(before);
  const edit = trusted && trustedEdit(parsed.written, parsed.expanded, trusted, folder);
  if (!edit) return { state: "untrusted", widens, folder, hash };
  if (edit.held.length === 0) return { state: "trusted", widens, folder, hash, edited: true };
  return { state: "untrusted", widens: edit.held, folder, hash, edited: true, edit: edit.file };
}
