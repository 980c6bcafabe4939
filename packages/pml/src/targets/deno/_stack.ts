/** Builds the registry pieces one `DenoModuleTarget` (one session) uses. */
import type { AuditLog } from "../../audit/audit.ts";
import type { Config } from "../../config/config.ts";
import type { Permissions } from "../../permission/patterns.ts";
import { RegistryLoader } from "../../registry/loader.ts";
import { Lockfile } from "../../registry/lockfile.ts";
import { ModuleCache } from "../../registry/module_cache.ts";
import { PrivateMcps } from "../../registry/private_mcps.ts";
import { RegistryClient } from "../../registry/registry_client.ts";

/** The session's registry client, cache, lockfile, private MCPs and loader. */
export interface RegistryStack {
  readonly client: RegistryClient;
  readonly cache: ModuleCache;
  /** Opens the lockfile once per session (clean-up on load); a corrupt file fails every time. */
  readonly lockfile: () => Promise<Lockfile>;
  readonly privateMcps: PrivateMcps;
  readonly loader: RegistryLoader;
}

/**
 * The registries of a config: `.pml.json` `registries`, else the cloud URL when an API key is set
 * (the cloud is contacted only in cloud mode), else none (registry modules are then unavailable).
 */
export function registriesOf(config: Config): string[] {
  if (config.registries.length) return [...config.registries];
  return config.apiKey ? [config.cloudUrl] : [];
}

export function createRegistryStack(deps: {
  config: Config;
  audit: AuditLog;
  permissions: () => Permissions;
  fetch?: typeof fetch;
  registryTimeoutMs?: number;
  warn?: (line: string) => void;
  now?: () => number;
}): RegistryStack {
  const warn = deps.warn ?? ((line: string) => console.error(line));
  const client = new RegistryClient({
    registries: registriesOf(deps.config),
    fetch: deps.fetch,
    timeoutMs: deps.registryTimeoutMs,
  });
  const cache = new ModuleCache(deps.config.pmlHome);
  let opened: Promise<Lockfile> | undefined;
  const lockfile = () => {
    opened ??= Lockfile.open(deps.config.workspace, {
      permissions: deps.permissions(),
      configured: new Set(Object.keys(deps.config.privateMcps)),
      maxAgeDays: deps.config.lockMaxAgeDays,
      now: deps.now?.(),
    }).then((lock) => {
      if (lock.dropped.length) {
        warn(
          `pml: debug: dropped from .pml/mcp.lock (no longer in allow/ask): ${
            lock.dropped.join(", ")
          }`,
        );
      }
      if (lock.stale.length) {
        warn(
          `pml: debug: dropped from .pml/mcp.lock (not used for ${deps.config.lockMaxAgeDays} ` +
            `days; pinned again on next use): ${lock.stale.join(", ")}`,
        );
      }
      return lock;
    }).catch((err) => {
      opened = undefined;
      throw err;
    });
    return opened;
  };
  const privateMcps = new PrivateMcps(deps.config.privateMcps, deps.config.workspace, warn);
  const loader = new RegistryLoader({
    client,
    cache,
    lockfile,
    privateMcps,
    audit: deps.audit,
    warn,
    now: deps.now,
  });
  return { client, cache, lockfile, privateMcps, loader };
}
