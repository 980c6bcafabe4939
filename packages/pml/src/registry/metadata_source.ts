/**
 * `RegistryMetadataSource`: the stdio metadata of `pml.mcp.<server>.server` from the configured
 * registries (the `MetadataSource` the stdio dependency target reads, after `private_mcps` and
 * before the built-in catalogue). The registry client checks the received bytes against the FQDN
 * hash and the ETag; pinning in `.pml/mcp.lock` is the stdio target's job (`McpPins`), for every
 * source alike. Answers are reused for the response's `max-age` (the catalogue list for a minute).
 * With the registries down, a server pinned in the lockfile is read from the cached canonical
 * document of its pin, with a warning.
 *
 * @module
 */
import { type DependencyMeta, type MetadataSource, parseStdioMetadata } from "../deps/metadata.ts";
import { PmlError } from "../errors.ts";
import { integrityToHex } from "./integrity.ts";
import type { Lockfile } from "./lockfile.ts";
import type { ModuleCache } from "./module_cache.ts";
import { isUnreachable, type RegistryClient } from "./registry_client.ts";
import { BoundedLoad, ListBoundExceeded } from "../targets/list_bound.ts";

const LIST_TTL_MS = 60_000;

/** See the module documentation. */
export class RegistryMetadataSource implements MetadataSource {
  readonly #client: RegistryClient;
  readonly #cache: ModuleCache;
  readonly #lockfile: () => Promise<Lockfile>;
  readonly #warn: (line: string) => void;
  readonly #exclude: ReadonlySet<string>;
  readonly #serverRouted: (namespace: string) => boolean;
  readonly #now: () => number;
  readonly #known = new Map<string, { meta?: DependencyMeta; until: number }>();
  readonly #pending = new Map<string, Promise<DependencyMeta | undefined>>();
  #list?: { names: string[]; until: number };
  readonly #listing = new BoundedLoad();

  constructor(deps: {
    client: RegistryClient;
    cache: ModuleCache;
    lockfile: () => Promise<Lockfile>;
    warn?: (line: string) => void;
    /** Namespaces owned by another target (the std tools): never served from here. */
    exclude?: Iterable<string>;
    /**
     * Namespaces the platform routes to the server (`json`, `tavily`, …): never a registry stdio
     * server (those are `client`), so never looked up here: a call to a cloud tool does not wait
     * for the registry first.
     */
    serverRouted?: (namespace: string) => boolean;
    now?: () => number;
  }) {
    this.#client = deps.client;
    this.#cache = deps.cache;
    this.#lockfile = deps.lockfile;
    this.#warn = deps.warn ?? ((l) => console.error(l));
    this.#exclude = new Set(deps.exclude ?? []);
    this.#serverRouted = deps.serverRouted ?? (() => false);
    this.#now = deps.now ?? Date.now;
  }

  async list(): Promise<string[]> {
    if (!this.#client.registries.length) return [];
    const now = this.#now();
    if (this.#list && this.#list.until > now) return this.#list.names;
    let names: string[];
    try {
      // Bounded like every remote wait of `tools/list`; a late answer still fills the cache.
      return await this.#listing.run(async () => {
        const items = await this.#client.findType("stdio");
        const found = items.map((i) => i.fqdn.split(".")[2]).filter((n) => !this.#exclude.has(n));
        this.#list = { names: found, until: this.#now() + LIST_TTL_MS };
        return found;
      });
    } catch (err) {
      if (!isUnreachable(err) && !(err instanceof ListBoundExceeded)) throw err;
      const lock = await this.#lockfile();
      names = lock.entries().filter(([, e]) => e.type === "stdio").map(([n]) => n.split(".")[2]);
      return names.filter((n) => !this.#exclude.has(n));
    }
  }

  async get(server: string): Promise<DependencyMeta | undefined> {
    if (this.#exclude.has(server) || !this.#client.registries.length) return undefined;
    if (this.#serverRouted(server)) return undefined;
    const known = this.#known.get(server);
    if (known && known.until > this.#now()) return known.meta;
    // Calls that arrive together share one look-up: every tool call asks whether its namespace is
    // a registry stdio server, and 64 calls at once sent 64 requests each time an answer expired.
    let pending = this.#pending.get(server);
    if (!pending) {
      pending = this.#lookUp(server).finally(() => this.#pending.delete(server));
      this.#pending.set(server, pending);
    }
    return await pending;
  }

  peek(server: string): DependencyMeta | null | undefined {
    if (this.#exclude.has(server) || !this.#client.registries.length) return null;
    if (this.#serverRouted(server)) return null;
    const known = this.#known.get(server);
    return known && known.until > this.#now() ? known.meta ?? null : undefined;
  }

  async #lookUp(server: string): Promise<DependencyMeta | undefined> {
    const name = `pml.mcp.${server}.server`;
    let failure: PmlError | undefined;
    for (const registry of this.#client.registries) {
      try {
        const f = await this.#client.fetchEntry(registry, name);
        const meta = f.type === "stdio"
          ? { ...parse(server, f.bytes!, registry), fqdn: f.fqdn }
          : undefined;
        this.#known.set(server, { meta, until: this.#now() + Math.max(f.maxAgeMs, 1000) });
        return meta;
      } catch (err) {
        if (err instanceof PmlError && err.code === "REGISTRY_NOT_FOUND") continue;
        if (!isUnreachable(err)) throw err;
        failure = err;
      }
    }
    if (!failure) {
      this.#known.set(server, { until: this.#now() + 60_000 });
      return undefined;
    }
    const locked = (await this.#lockfile()).get(name);
    const hex = locked?.type === "stdio" ? integrityToHex(locked.integrity) : undefined;
    const cached = hex ? await this.#cache.get(hex).catch(() => undefined) : undefined;
    if (!cached) return undefined; // the built-in catalogue may still know it
    this.#warn(
      `pml: warning: registry unreachable (${failure.message}); using the metadata of "${server}" pinned in .pml/mcp.lock`,
    );
    return { ...parse(server, cached, "cache"), fqdn: locked!.fqdn };
  }
}

function parse(server: string, bytes: Uint8Array, source: string): DependencyMeta {
  return parseStdioMetadata(
    server,
    JSON.parse(new TextDecoder().decode(bytes)),
    `registry ${source}`,
  );
}
