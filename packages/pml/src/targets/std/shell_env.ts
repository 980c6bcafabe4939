/**
 * The environment of `shell:exec` beyond `PATH` and `HOME` (docs/security.md, "Package managers
 * in the sandbox"): `HOME` is read-only there (the toolbox view), so the caches that tools write
 * under it by default go to the sandbox's private writable `/tmp`, each package manager's own; and
 * where `sandbox.net` grants no host, npm does not retry a registry it cannot reach.
 *
 * @module
 */

import { SANDBOX_CACHE_HOME } from "../../sandbox/os_sandbox.ts";

/** Where caches go inside the sandbox: its private `/tmp` (a sized tmpfs, gone with it). */
export { SANDBOX_CACHE_HOME };

/**
 * The cache variables of `shell:exec`: the XDG cache (pip, Go's build cache, most tools) and the
 * package managers that keep theirs under `HOME` whatever XDG says (npm's `~/.npm`, Yarn 1, Bun). With no host granted, npm's fetch retries are off: it would wait about a minute
 * on a registry it can never reach before it says so; a granted registry keeps npm's own retries.
 *
 * @example
 * ```ts
 * shellCacheEnv({ netGranted: false }).npm_config_cache; // "/tmp/.cache/npm"
 * ```
 */
export function shellCacheEnv(opts: { netGranted: boolean }): Record<string, string> {
  const root = SANDBOX_CACHE_HOME;
  return {
    XDG_CACHE_HOME: root,
    npm_config_cache: `${root}/npm`,
    YARN_CACHE_FOLDER: `${root}/yarn`,
    BUN_INSTALL_CACHE_DIR: `${root}/bun`,
    ...(opts.netGranted ? {} : { npm_config_fetch_retries: "0" }),
  };
}
