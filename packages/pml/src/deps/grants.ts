/**
 * What a stdio dependency is granted, in words for its approval question, and the network hosts
 * `.pml.json` adds to what its metadata declares (docs/permissions.md, "Network grants").
 *
 * @module
 */
import type { DependencyMeta } from "./metadata.ts";

/**
 * `meta` with `extraNet` (`.pml.json` `sandbox.net`) added to its declared network hosts.
 *
 * @example
 * ```ts
 * withNetGrants(meta, ["127.0.0.1:8080"]).permissions.net; // [...declared, "127.0.0.1:8080"]
 * ```
 */
export function withNetGrants(meta: DependencyMeta, extraNet: readonly string[]): DependencyMeta {
  if (extraNet.length === 0) return meta;
  const net = [...new Set([...meta.permissions.net, ...extraNet])];
  return { ...meta, permissions: { ...meta.permissions, net } };
}

/**
 * The grants of an npm server run under Deno, as the approval shows them: reads, writes, network
 * hosts and environment variables (registry placeholders in words).
 */
export function describeDenoGrants(meta: DependencyMeta): string {
  const { read, write, net, env } = meta.permissions;
  const names = [...new Set([...meta.envRequired, ...env])];
  return [
    `reads its install folder${read.length ? `, ${read.map(words).join(", ")}` : ""}`,
    write.length ? `writes ${write.map(words).join(", ")}` : "writes nothing",
    net.length ? `network to ${net.join(", ")} only` : "no network",
    names.length ? `environment ${names.join(", ")}` : "no environment variables",
  ].join("; ");
}

function words(path: string): string {
  return path.replaceAll("${packageDir}", "its package folder").replaceAll(
    "${workspace}",
    "the workspace",
  );
}
