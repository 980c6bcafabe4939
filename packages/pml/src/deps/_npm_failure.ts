import { join } from "node:path";
import { PmlError } from "../errors.ts";
import type { PinnedPackage } from "./metadata.ts";

/** npm's error codes for a registry it could not reach. */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "ENETUNREACH",
  "EHOSTUNREACH",
]);

/**
 * The error for a failed `npm install`: what is missing and what to do, in PML's words, for the
 * failures a user can fix (npm offline without the package in its cache: `ENOTCACHED`; the npm
 * registry unreachable); npm's own last lines otherwise. npm's full text stays in `details.npm`.
 */
export function npmInstallFailure(
  pkg: PinnedPackage,
  result: { code: number; stderr: string },
  ctx: { offline: boolean; env: Readonly<Record<string, string>> },
): PmlError {
  const lines = result.stderr.split("\n").filter((l) =>
    l.trim() && !l.includes("Unknown user config") && !/^npm (notice|warn)\b/.test(l) &&
    !l.includes("A complete log of this run")
  );
  const npmCode = /^npm (?:error|ERR!) code (\S+)/m.exec(result.stderr)?.[1];
  const spec = `${pkg.name}@${pkg.version}`;
  const cache = npmCacheDir(ctx.env);
  const details = { package: pkg.name, version: pkg.version, npmCode, npm: lines.join("\n") };
  if (npmCode === "ENOTCACHED") {
    return new PmlError(
      "DEPENDENCY_NOT_CACHED",
      `Cannot install ${spec}: npm is offline${
        ctx.offline ? " (only npm's local cache is used)" : " (npm's offline setting)"
      } and its cache${
        cache ? ` (${cache})` : ""
      } does not hold the package. To fix: run "npm cache add ${spec}" once on a network that ` +
        `reaches the npm registry (or call this tool again online, without npm's offline ` +
        `setting), then retry; ${
          pkg.integrity
            ? `the pinned integrity ${pkg.integrity.slice(0, 19)}… is checked either way`
            : "no integrity is pinned for it (private_mcps, development)"
        }. Nothing was installed.`,
      { details },
    );
  }
  if (npmCode && UNREACHABLE.has(npmCode)) {
    const registry = /request to (\S+?) failed/.exec(result.stderr)?.[1];
    return new PmlError(
      "DEPENDENCY_REGISTRY_UNREACHABLE",
      `Cannot install ${spec}: npm cannot reach its registry (${npmCode}${
        registry ? ` for ${registry}` : ""
      }) and its cache${
        cache ? ` (${cache})` : ""
      } does not hold the package. To fix: connect to the network, or set the proxy ` +
        `(HTTPS_PROXY) or npm_config_registry in the environment of your MCP client, or run ` +
        `"npm cache add ${spec}" where the registry is reachable; then retry. Nothing was installed.`,
      { details },
    );
  }
  return new PmlError(
    "DEPENDENCY_INSTALL_FAILED",
    `Cannot install ${spec}: npm install exited with code ${result.code}${
      ctx.offline ? " (offline: only npm's local cache is used)" : ""
    }\n${lines.slice(-6).join("\n")}`,
    { details },
  );
}

/** npm's cache folder as this environment sets it (`npm_config_cache`, else `~/.npm`). */
function npmCacheDir(env: Readonly<Record<string, string>>): string | undefined {
  const set = Object.entries(env).find(([k]) => k.toLowerCase() === "npm_config_cache")?.[1];
  if (set) return set;
  return env.HOME ? join(env.HOME, ".npm") : undefined;
}
