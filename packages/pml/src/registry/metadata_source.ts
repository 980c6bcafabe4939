/**
 * `RegistryMetadataSource`: the stdio metadata of `pml.mcp.<server>.server` from the registries
 * (the `MetadataSource` the stdio dependency target reads), pinned in `.pml/mcp.lock` like deno
 * modules: the first fetch records the SHA-256 of the JSON bytes; a different hash later is an
 * `INTEGRITY_CHANGED` error (details: old and new) until {@link RegistryMetadataSource.accept} is
 * called after the human approved it. Verified bytes are cached; with the registries down the
 * locked, cached metadata is used with a warning.
 *
 * @module
 */
import type { AuditLog } from "../audit/audit.ts";
import { type DependencyMeta, type MetadataSource, parseStdioMetadata } from "../deps/metadata.ts";
import { PmlError } from "../errors.ts";
import { digest, integrityToHex } from "./integrity.ts";
import type { LockEntry, Lockfile } from "./lockfile.ts";
import type { ModuleCache } from "./module_cache.ts";
import { isUnreachable, type RegistryClient } from "./registry_client.ts";

/** See the module documentation. */
export class RegistryMetadataSource implements MetadataSource {
  readonly #client: RegistryClient;
  readonly #cache: ModuleCache;
  readonly #lockfile: () => Promise<Lockfile>;
  readonly #audit: AuditLog;
  readonly #warn: (line: string) => void;

  constructor(deps: {
    client: RegistryClient;
    cache: ModuleCache;
    lockfile: () => Promise<Lockfile>;
    audit: AuditLog;
    warn?: (line: string) => void;
  }) {
    this.#client = deps.client;
    this.#cache = deps.cache;
    this.#lockfile = deps.lockfile;
    this.#audit = deps.audit;
    this.#warn = deps.warn ?? ((l) => console.error(l));
  }

  async list(): Promise<string[]> {
    try {
      const res = await this.#client.findType("stdio");
      return res.map((i) => i.fqdn.split(".")[2]);
    } catch (err) {
      if (!isUnreachable(err)) throw err;
      const lock = await this.#lockfile();
      return lock.entries().filter(([, e]) => e.type === "stdio").map(([n]) => n.split(".")[2]);
    }
  }

  async get(server: string): Promise<DependencyMeta | undefined> {
    const name = `pml.mcp.${server}.server`;
    const lock = await this.#lockfile();
    const locked = lock.get(name);
    const lockedHex = locked && integrityToHex(locked.integrity);
    let cached: Uint8Array | undefined;
    try {
      cached = lockedHex ? await this.#cache.get(lockedHex) : undefined;
    } catch { /* tampered: removed by the cache, fetched again below */ }
    let failure: PmlError | undefined;
    for (const registry of this.#client.registries) {
      try {
        const f = await this.#client.fetchEntry(registry, name, cached ? lockedHex : undefined);
        if (f.type !== "stdio") return undefined;
        const bytes = f.bytes ?? cached!;
        const d = await digest(bytes);
        const entry: LockEntry = {
          fqdn: f.fqdn,
          integrity: d.integrity,
          type: "stdio",
          routing: f.routing,
          fetchedAt: new Date().toISOString(),
        };
        if (locked && locked.integrity !== d.integrity) {
          await this.#audit.write("integrity", {
            name,
            event: "changed",
            old: locked.integrity,
            new: d.integrity,
          });
          throw new PmlError(
            "INTEGRITY_CHANGED",
            `The registry metadata of "${server}" changed since it was pinned in .pml/mcp.lock: locked ${locked.integrity}, now ${d.integrity}`,
            { details: { name, old: locked, new: entry, bytes } },
          );
        }
        if (!locked) {
          await this.#cache.put(bytes);
          await lock.record(name, entry);
          await this.#audit.write("integrity", { name, event: "recorded", integrity: d.integrity });
        }
        return parse(server, bytes, registry);
      } catch (err) {
        if (err instanceof PmlError && err.code === "REGISTRY_NOT_FOUND") continue;
        if (!isUnreachable(err)) throw err;
        failure = err;
      }
    }
    if (!failure) return undefined;
    if (!locked || !cached) throw failure;
    this.#warn(
      `pml: warning: registry unreachable (${failure.message}); using the cached metadata of "${server}"`,
    );
    return parse(server, cached, "cache");
  }

  /** Records an approved change (the `details` of an `INTEGRITY_CHANGED` error). */
  async accept(details: { name: string; new: LockEntry; bytes: Uint8Array }): Promise<void> {
    await this.#cache.put(details.bytes);
    await (await this.#lockfile()).record(details.name, details.new);
    await this.#audit.write("integrity", {
      name: details.name,
      event: "approved",
      integrity: details.new.integrity,
    });
  }
}

function parse(server: string, bytes: Uint8Array, source: string): DependencyMeta {
  return parseStdioMetadata(
    server,
    JSON.parse(new TextDecoder().decode(bytes)),
    `registry ${source}`,
  );
}
