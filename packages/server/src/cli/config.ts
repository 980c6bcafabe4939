/**
 * Server configuration, parsed once from command-line flags and the environment.
 * Flags win over environment variables, which win over defaults.
 *
 * | setting | flag | environment | default |
 * | --- | --- | --- | --- |
 * | port | `--port` | `PORT` | 3003 |
 * | hostname | `--hostname` | | `127.0.0.1` |
 * | SQLite folder | `--data-dir` | `PML_DATA_DIR` | `~/.pml-server` (`./data` without `HOME`) |
 * | PostgreSQL | | `PML_DATABASE_URL` | none: SQLite |
 * | deadline of one PostgreSQL operation (ms) | | `PML_DATABASE_TIMEOUT_MS` | 3000 |
 * | time for a request's headers (ms, `0`: no guard) | | `PML_HEADER_TIMEOUT_MS` | 10000 |
 * | time for a request's body (ms) | | `PML_BODY_TIMEOUT_MS` | 30000 |
 * | registry folder | `--registry-dir` | `PML_REGISTRY_DIR` | the repository's `registry/` |
 *
 * @module
 */
import { join, resolve } from "node:path";

/** Default port of `pml-server serve`. */
export const DEFAULT_PORT = 3003;
/** Default time for a request's headers (ms). */
export const DEFAULT_HEADER_TIMEOUT_MS = 10_000;
/** Default time for a request's body (ms). */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000;

/** The resolved configuration. */
export interface ServerConfig {
  readonly port: number;
  readonly hostname: string;
  /** Absolute folder of the SQLite file (unused when `databaseUrl` is set). */
  readonly dataDir: string;
  readonly databaseUrl?: string;
  /** Deadline of one PostgreSQL operation, connecting included (ms). */
  readonly databaseTimeoutMs?: number;
  /** Time for a request's headers (ms); `0` serves without the header guard. */
  readonly headerTimeoutMs: number;
  /** Time for a request's body, whole (ms). */
  readonly bodyTimeoutMs: number;
  /** Absolute `registry/` folder (std modules, MCP metadata, routing.json). */
  readonly registryDir: string;
}

/** Flags accepted by every command that touches the store. */
export interface ConfigFlags {
  readonly port?: string;
  readonly hostname?: string;
  readonly "data-dir"?: string;
  readonly "registry-dir"?: string;
}

/**
 * Resolves the configuration.
 *
 * @throws {TypeError} on an invalid port or database URL.
 */
export function resolveConfig(
  flags: ConfigFlags,
  env: (name: string) => string | undefined,
  cwd: string,
): ServerConfig {
  const portText = flags.port ?? env("PORT") ?? String(DEFAULT_PORT);
  const port = /^[0-9]{1,5}$/.test(portText) ? Number(portText) : NaN;
  if (!(port >= 0 && port <= 65535)) {
    throw new TypeError(`Invalid port "${portText}": expected an integer from 0 to 65535`);
  }
  const databaseUrl = env("PML_DATABASE_URL") || undefined;
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new TypeError(`Invalid PML_DATABASE_URL: expected a postgres:// URL`);
  }
  const databaseTimeoutMs = durationMs("PML_DATABASE_TIMEOUT_MS", env);
  const headerTimeoutMs = durationMs("PML_HEADER_TIMEOUT_MS", env, { zero: true }) ??
    DEFAULT_HEADER_TIMEOUT_MS;
  const bodyTimeoutMs = durationMs("PML_BODY_TIMEOUT_MS", env) ?? DEFAULT_BODY_TIMEOUT_MS;
  const home = env("HOME");
  const dataDir = flags["data-dir"] ?? env("PML_DATA_DIR") ??
    (home ? join(home, ".pml-server") : "data");
  const registryDir = flags["registry-dir"] ?? env("PML_REGISTRY_DIR") ??
    join(import.meta.dirname!, "../../../../registry");
  return {
    port,
    hostname: flags.hostname ?? "127.0.0.1",
    dataDir: resolve(cwd, dataDir),
    databaseUrl,
    ...(databaseTimeoutMs === undefined ? {} : { databaseTimeoutMs }),
    headerTimeoutMs,
    bodyTimeoutMs,
    registryDir: resolve(cwd, registryDir),
  };
}

/** A duration in ms from the environment variable `name` (`undefined` when unset). */
function durationMs(
  name: string,
  env: (name: string) => string | undefined,
  options: { zero?: boolean } = {},
): number | undefined {
  const text = env(name);
  if (text === undefined || text === "") return undefined;
  const ms = /^[0-9]{1,9}$/.test(text) ? Number(text) : NaN;
  if (!(ms > 0 || (options.zero && ms === 0))) {
    const what = options.zero ? "an integer from 0" : "a positive integer";
    throw new TypeError(`Invalid ${name} "${text}": expected ${what} (milliseconds)`);
  }
  return ms;
}
