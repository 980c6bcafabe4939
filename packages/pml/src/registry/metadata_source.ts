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

const LIST_TTL_MS = 60_000;

/** See the module documentation. */
export class RegistryMetadataSource implements MetadataSource {
  readonly #client: RegistryClient;
  readonly #cache: ModuleCache;
  readonly #lockfile: () => Promise<Lockfile>;
  readonly #warn: (line: string) => void;
  readonly #exclude: ReadonlySet<string>;
  readonly #now: () => number;
  readonly #known = new Map<string, { meta?: DependencyMeta; until: number }>();
  readonly #pending = new Map<string, Promise<DependencyMeta | undefined>>();
  #list?: { names: string[]; until: number };

  constructor(deps: {
    client: RegistryClient;
    cache: ModuleCache;
    lockfile: () => Promise<Lockfile>;
    warn?: (line: string) => void;
    /** Namespaces owned by another target (the std tools): never served from here. */
    exclude?: Iterable<string>;
    now?: () => number;
  }) {
    this.#client = deps.client;
    this.#cache = deps.cache;
    this.#lockfile = deps.lockfile;
    this.#warn = deps.warn ?? ((l) => console.error(l));
    this.#exclude = new Set(deps.exclude ?? []);
    this.#now = deps.now ?? Date.now;
  }

  async list(): Promise<string[]> {
    if (!this.#client.registries.length) return [];
    const now = this.#now();
    if (this.#list && this.#list.until > now) return this.#list.names;
    let names: string[];
    try {
      names = (await this.#client.findType("stdio")).map((i) => i.fqdn.split(".")[2]);
      this.#list = { names: names.filter((n) => !this.#exclude.has(n)), until: now + LIST_TTL_MS };
      return this.#list.names;
    } catch (err) {
      if (!isUnreachable(err)) throw err;
      const lock = await this.#lockfile();
      names = lock.entries().filter(([, e]) => e.type === "stdio").map(([n]) => n.split(".")[2]);
      return names.filter((n) => !this.#exclude.has(n));
    }
  }

  async get(server: string): Promise<DependencyMeta | undefined> {
    if (this.#exclude.has(server) || !this.#client.registries.length) return undefined;
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
