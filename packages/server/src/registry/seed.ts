/**
 * Seeds the store from the repository's `registry/` folder: std modules and MCP metadata.
 * Idempotent: hashes are recomputed from the files, unchanged entries are not written, seeded
 * entries whose file is gone are deleted. Every file is validated before anything is written.
 *
 * @module
 */
import { join } from "node:path";
import type { RegistryEntry, Store } from "../store/store.ts";
import { mcpMetadataEntry } from "./mcp_metadata.ts";
import type { RoutingTable } from "./routing_table.ts";
import { listStdModules, stdModuleEntries } from "./std_modules.ts";

/** What a seed run changed (entry names). */
export interface SeedResult {
  readonly added: string[];
  readonly updated: string[];
  readonly removed: string[];
  readonly unchanged: number;
}

/** Options of {@link seedRegistry}. */
export interface SeedOptions {
  /** The `registry/` folder holding `std/*.ts` and `mcp/*.json`. */
  readonly registryDir: string;
  readonly routing: RoutingTable;
  readonly now?: () => Date;
}

/**
 * Builds every seed entry from `registryDir` and writes the differences to `store`.
 *
 * @example
 * ```ts
 * const result = await seedRegistry(store, { registryDir: "registry", routing });
 * console.log(result.added.length, "added");
 * ```
 */
export async function seedRegistry(store: Store, options: SeedOptions): Promise<SeedResult> {
  const entries = await buildSeedEntries(options);
  const result = {
    added: [] as string[],
    updated: [] as string[],
    removed: [] as string[],
    unchanged: 0,
  };
  for (const entry of entries) {
    const existed = (await store.getEntry(entry.name)) !== undefined;
    if (!(await store.putEntry(entry))) result.unchanged += 1;
    else (existed ? result.updated : result.added).push(entry.name);
  }
  const current = new Set(entries.map((entry) => entry.name));
  const stale = (await store.listNames("seed")).filter((name) => !current.has(name));
  await store.deleteEntries(stale);
  result.removed.push(...stale);
  return result;
}

/** All seed entries of `registryDir`, validated, sorted by name. */
export async function buildSeedEntries(options: SeedOptions): Promise<RegistryEntry[]> {
  const updatedAt = (options.now?.() ?? new Date()).toISOString();
  const entries: RegistryEntry[] = [];
  for (const path of await listStdModules(join(options.registryDir, "std"))) {
    entries.push(...await stdModuleEntries(path, options.routing, updatedAt));
  }
  for (const path of await listJson(join(options.registryDir, "mcp"))) {
    entries.push(await mcpMetadataEntry(path, updatedAt));
  }
  const seen = new Set<string>();
  for (const entry of entries) {
    if (seen.has(entry.name)) {
      throw new TypeError(
        `Registry entry "${entry.name}" is defined twice in "${options.registryDir}"`,
      );
    }
    seen.add(entry.name);
  }
  return entries.sort((a, b) => a.name < b.name ? -1 : 1);
}

async function listJson(dir: string): Promise<string[]> {
  const paths: string[] = [];
  try {
    for await (const item of Deno.readDir(dir)) {
      if (item.isFile && item.name.endsWith(".json")) paths.push(join(dir, item.name));
    }
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  return paths.sort();
}
