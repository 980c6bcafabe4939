import { join } from "node:path";
import { writeFileAtomic } from "../../config/write_json.ts";
import type { Tool } from "../../sdk/types.ts";

/** The cache file in `~/.pml` (shared by projects, one cloud at a time). */
export const CLOUD_TOOLS_CACHE_FILE = "cloud-tools.json";

/** A tool list the cloud served, and when (epoch ms). */
export interface CachedTools {
  readonly tools: readonly Tool[];
  readonly fetchedAt: number;
}

/** Where the last tool list of the cloud is kept between runs of `pml`. */
export interface CloudToolsCache {
  /** The last list of this cloud, if any (never throws). */
  read(): CachedTools | undefined;
  /** Stores a fresh list (best effort: a failure to write is ignored). */
  write(list: CachedTools): Promise<void>;
}

/**
 * The cloud's `tools/list` (names, descriptions, input schemas; no keys) kept in
 * `~/.pml/cloud-tools.json` for `cloudUrl`, so that a `pml` started while the cloud is silent still
 * lists its tools with their real schemas, and knows which tool ids exist.
 *
 * @example
 * ```ts
 * const cache = fileToolsCache("/home/a/.pml", "https://pml.casys.ai");
 * cache.read()?.tools.map((t) => t.name);
 * ```
 */
export function fileToolsCache(pmlHome: string, cloudUrl: string): CloudToolsCache {
  const path = join(pmlHome, CLOUD_TOOLS_CACHE_FILE);
  return {
    read() {
      try {
        const file = JSON.parse(Deno.readTextFileSync(path));
        if (file?.cloudUrl !== cloudUrl || !Array.isArray(file.tools)) return undefined;
        const tools = (file.tools as unknown[]).filter(isTool);
        const fetchedAt = Date.parse(file.fetchedAt);
        return { tools, fetchedAt: Number.isNaN(fetchedAt) ? 0 : fetchedAt };
      } catch {
        return undefined;
      }
    },
    async write(list) {
      const file = {
        cloudUrl,
        fetchedAt: new Date(list.fetchedAt).toISOString(),
        tools: list.tools,
      };
      await writeFileAtomic(path, JSON.stringify(file) + "\n").catch(() => {});
    },
  };
}

/** A cache that keeps nothing (tests, embedding without a PML home). */
export const NO_TOOLS_CACHE: CloudToolsCache = {
  read: () => undefined,
  write: () => Promise.resolve(),
};

function isTool(value: unknown): value is Tool {
  const t = value as Partial<Tool> | null;
  return !!t && typeof t === "object" && typeof t.name === "string" &&
    !!t.inputSchema && typeof t.inputSchema === "object";
}
