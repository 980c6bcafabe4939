/**
 * The tools the registry knows, one {@link CatalogTool} per tool id, read from the store: std
 * modules (their `__meta__`), stdio and http metadata (`tools`), published capabilities. The
 * MCP endpoint lists and calls the server-side ones; `pml:search` ranks all of them.
 *
 * Built once per registry version (the store's counter, read at most once per `ttlMs`), so a
 * publish or a reseed — by this instance or another sharing the database — is picked up. While the
 * store is unavailable the last built catalog serves on (and is checked again in the background);
 * only a first build needs the store.
 *
 * Std module bodies are imported (from a `data:` URL of the stored bytes) to read `__meta__` and,
 * for server-routed namespaces, to run them. Only seeded `pml.std.*` entries are imported: they
 * come from the repository's `registry/std/` folder and are trusted like the server's own code.
 * Published capability code is never imported here.
 *
 * @module
 */
import { encodeBase64 } from "../registry/_base64.ts";
import { fqdnWithHash } from "../registry/fqdn.ts";
import type { EntryType, RegistryEntry, Routing, Store } from "../store/store.ts";
import { StoreUnavailableError } from "../store/unavailable.ts";
import { exposedName } from "./names.ts";

/** Where an http entry's BYOK key goes (`format` contains `{key}`). */
export interface ByokPlacement {
  readonly env: string;
  readonly header: string;
  readonly format: string;
}

/** One tool of the registry. */
export interface CatalogTool {
  /** Tool id `namespace:action`. */
  readonly id: string;
  /** Exposed name `namespace__action`. */
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly routing: Routing;
  /** `std`: a `registry/std` module; `capability`: published; `stdio` / `http`: MCP servers. */
  readonly kind: "std" | "capability" | "stdio" | "http";
  readonly type: EntryType;
  /** Current 5-part FQDN of the entry providing the tool. */
  readonly fqdn: string;
  /** Description of the whole namespace or server (a weaker search signal). */
  readonly namespaceDescription: string;
  /** BYOK variables the tool needs. */
  readonly envRequired: readonly string[];
  /** http tools: upstream endpoint, upstream tool name and key placement. */
  readonly http?: { readonly proxyTo: string; readonly upstreamName: string; byok?: ByokPlacement };
  /** std tools: the module's function for the action. */
  readonly run?: (args: Record<string, unknown>, ctx: unknown) => unknown;
}

/** A built catalog: every tool, and a lookup by id or exposed name. */
export interface CatalogSnapshot {
  /** Registry version it was built from. */
  readonly version: number;
  readonly tools: readonly CatalogTool[];
  /** By tool id and by exposed name. */
  readonly byName: ReadonlyMap<string, CatalogTool>;
}

/** Options of {@link ToolCatalog}. */
export interface ToolCatalogOptions {
  /** How long a built catalog is trusted before checking the registry version (ms, default 1000). */
  readonly ttlMs?: number;
  readonly now?: () => number;
}

const PAGE = 500;

/** See the module documentation. */
export class ToolCatalog {
  readonly #store: Store;
  readonly #ttlMs: number;
  readonly #now: () => number;
  readonly #modules = new Map<string, Promise<Record<string, unknown>>>();
  #snapshot: CatalogSnapshot | undefined;
  #checkedAt = Number.NEGATIVE_INFINITY;
  #pending: Promise<CatalogSnapshot> | undefined;
  /** The last refresh failed with the store unavailable. */
  #storeDown = false;

  constructor(store: Store, options: ToolCatalogOptions = {}) {
    this.#store = store;
    this.#ttlMs = options.ttlMs ?? 1000;
    this.#now = options.now ?? Date.now;
  }

  /** The current catalog, rebuilt when the registry version changed. */
  snapshot(): Promise<CatalogSnapshot> {
    if (this.#snapshot && this.#now() - this.#checkedAt < this.#ttlMs) {
      return Promise.resolve(this.#snapshot);
    }
    this.#pending ??= this.#refresh().finally(() => this.#pending = undefined);
    if (this.#storeDown && this.#snapshot) {
      this.#pending.catch(() => {});
      return Promise.resolve(this.#snapshot);
    }
    return this.#pending;
  }

  async #refresh(): Promise<CatalogSnapshot> {
    try {
      const version = await this.#store.registryVersion();
      if (this.#snapshot?.version !== version) this.#snapshot = await this.#build(version);
      this.#storeDown = false;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError) || !this.#snapshot) throw error;
      this.#storeDown = true;
    }
    this.#checkedAt = this.#now();
    return this.#snapshot!;
  }

  async #build(version: number): Promise<CatalogSnapshot> {
    const tools: CatalogTool[] = [];
    for (let offset = 0;; offset += PAGE) {
      const page = await this.#store.listEntries({ offset, limit: PAGE });
      for (const summary of page.items) {
        const entry = await this.#store.getEntry(summary.name);
        if (entry) tools.push(...await this.#entryTools(entry));
      }
      if (offset + PAGE >= page.total) break;
    }
    tools.sort((a, b) => a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
    const byName = new Map<string, CatalogTool>();
    for (const tool of tools) {
      // A published capability never shadows a seeded tool of the same id.
      for (const key of [tool.id, tool.name]) {
        const known = byName.get(key);
        if (!known || known.kind === "capability") byName.set(key, tool);
      }
    }
    return { version, tools, byName };
  }

  async #entryTools(entry: RegistryEntry): Promise<CatalogTool[]> {
    const base = {
      routing: entry.routing,
      type: entry.type,
      fqdn: fqdnWithHash(entry.name, entry.hash),
    };
    if (entry.type === "deno" && entry.origin === "seed" && entry.name.startsWith("pml.std.")) {
      const module = await this.#importStd(entry);
      const meta = module.__meta__ as StdMeta;
      const action = entry.name.split(".")[3];
      const tool = meta.tools[action];
      const fn = module[action];
      if (!tool || typeof fn !== "function") return [];
      return [{
        ...base,
        id: `${meta.namespace}:${action}`,
        name: exposedName(`${meta.namespace}:${action}`),
        description: tool.description,
        inputSchema: tool.inputSchema,
        kind: "std",
        namespaceDescription: meta.description,
        envRequired: [],
        run: fn as CatalogTool["run"],
      }];
    }
    if (entry.type === "deno") {
      return entry.tools.map((id) => ({
        ...base,
        id,
        name: exposedName(id),
        description: entry.description,
        inputSchema: { type: "object" },
        kind: "capability",
        namespaceDescription: "",
        envRequired: [],
      }));
    }
    const meta = JSON.parse(new TextDecoder().decode(entry.body)) as McpMeta;
    const envRequired = meta.type === "http" ? meta.envRequired : meta.install.envRequired;
    return meta.tools.map((tool) => {
      const upstreamName = tool.name.slice(tool.name.indexOf(":") + 1);
      return {
        ...base,
        id: tool.name,
        name: exposedName(tool.name),
        description: tool.description,
        inputSchema: tool.inputSchema,
        kind: meta.type,
        namespaceDescription: meta.description,
        envRequired,
        ...(meta.type === "http"
          ? { http: { proxyTo: meta.proxyTo, upstreamName, byok: meta.byok } }
          : {}),
      };
    });
  }

  /** Imports a std module from its stored bytes, once per content hash. */
  #importStd(entry: RegistryEntry): Promise<Record<string, unknown>> {
    let module = this.#modules.get(entry.hash);
    if (!module) {
      const url = `data:application/typescript;base64,${encodeBase64(entry.body)}`;
      module = import(url);
      this.#modules.set(entry.hash, module);
      module.catch(() => this.#modules.delete(entry.hash));
    }
    return module;
  }
}

interface StdMeta {
  namespace: string;
  description: string;
  tools: Record<string, { description: string; inputSchema: Record<string, unknown> }>;
}

interface MetaTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

type McpMeta =
  | { type: "stdio"; description: string; install: { envRequired: string[] }; tools: MetaTool[] }
  | {
    type: "http";
    description: string;
    proxyTo: string;
    envRequired: string[];
    byok?: ByokPlacement;
    tools: MetaTool[];
  };
