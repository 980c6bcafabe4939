import type { DependencyMeta } from "../../deps/metadata.ts";
import type { MetadataPin } from "../../registry/mcp_pins.ts";
import { serverLockName } from "../upstream/tool_guard.ts";

/**
 * A `private_mcps` server: the user's own entry (its metadata changes are recorded, not asked; its
 * tools' definitions are pinned like any server's).
 */
export function isPrivate(meta: DependencyMeta): boolean {
  return meta.source.startsWith(".pml.json");
}

/** The lock entry of a stdio server's pins. */
export function lockName(meta: DependencyMeta): string {
  return serverLockName(meta.server);
}

/**
 * What `.pml/mcp.lock` pins of a stdio server: the npm package, and a canonical metadata document
 * (command, permissions, tools as listed) whose hash is the entry's `integrity`. The document is a
 * valid stdio metadata file, so the pinned version can be read back from the cache offline.
 */
export function metadataPin(meta: DependencyMeta): MetadataPin {
  const name = lockName(meta);
  return {
    fqdn: meta.fqdn.split(".").length === 5 ? meta.fqdn : name,
    type: "stdio",
    routing: "client",
    ...(meta.package ? { package: { ...meta.package } } : {}),
    document: {
      type: "stdio",
      fqdn: name,
      description: meta.description,
      install: { command: meta.command, args: meta.args, envRequired: meta.envRequired },
      ...(meta.package ? { package: meta.package } : {}),
      permissions: meta.permissions,
      tools: meta.tools.map((t) => ({
        name: `${meta.server}:${t.action}`,
        description: t.description,
        inputSchema: t.inputSchema,
      })),
      ...(meta.warnings !== undefined ? { warnings: meta.warnings } : {}),
    },
  };
}
