import { basename, join } from "node:path";
import type { PrivateMcp } from "../config/schema.ts";
import {
  type DependencyMeta,
  type MetadataSource,
  parseStdioMetadata,
  type PinnedPackage,
} from "./metadata.ts";
import { type NpmResolver, splitPackageSpec } from "./npm_resolver.ts";
import { defaultNpmGrants, npxPackage } from "./npx.ts";
import { CATALOGUE_DIR } from "../paths.ts";

/** The repository's own catalogue of stdio servers (`registry/mcp/*.json`), so PML works offline. */
export { CATALOGUE_DIR };

/**
 * Stdio metadata read from a folder of `<server>.json` files (the built-in catalogue). Files of other
 * types (`http`) are ignored; an invalid stdio file is reported when that server is asked for.
 */
export class CatalogueSource implements MetadataSource {
  readonly #dir: string;
  readonly #exclude: ReadonlySet<string>;
  #loaded?: Promise<Map<string, () => DependencyMeta>>;
  /** The loaded catalogue, once {@link CatalogueSource.#loaded} has settled. */
  #entries?: Map<string, () => DependencyMeta>;

  /** `exclude`: namespaces owned by another target (the std tools), never served from here. */
  constructor(dir: string = CATALOGUE_DIR, opts: { exclude?: Iterable<string> } = {}) {
    this.#dir = dir;
    this.#exclude = new Set(opts.exclude ?? []);
  }

  async list(): Promise<string[]> {
    return [...(await this.#load()).keys()];
  }

  async get(server: string): Promise<DependencyMeta | undefined> {
    return (await this.#load()).get(server)?.();
  }

  peek(server: string): DependencyMeta | null | undefined {
    const entry = this.#entries?.get(server);
    if (!entry) return this.#entries ? null : undefined;
    try {
      return entry();
    } catch {
      return undefined; // an invalid file: `get` reports it
    }
  }

  #load(): Promise<Map<string, () => DependencyMeta>> {
    this.#loaded ??= (async () => {
      const entries = new Map<string, () => DependencyMeta>();
      let files: Deno.DirEntry[];
      try {
        files = await Array.fromAsync(Deno.readDir(this.#dir));
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) return entries;
        throw err;
      }
      for (
        const f of files.filter((f) => f.isFile && f.name.endsWith(".json")).sort((a, b) =>
          a.name < b.name ? -1 : 1
        )
      ) {
        const server = basename(f.name, ".json");
        if (this.#exclude.has(server)) continue;
        const path = join(this.#dir, f.name);
        const raw = JSON.parse(await Deno.readTextFile(path));
        if (raw?.type !== "stdio") continue;
        let meta: DependencyMeta | undefined;
        entries.set(
          server,
          () => (meta ??= parseStdioMetadata(server, raw, `catalogue ${f.name}`)),
        );
      }
      return this.#entries = entries;
    })();
    return this.#loaded;
  }
}

/** How {@link PrivateMcpSource} pins a hand-written `npx` entry. */
export interface NpxPinning {
  readonly resolver: NpmResolver;
  /** The package `.pml/mcp.lock` pins for `server`, if any (kept until the entry changes). */
  readonly pinned: (server: string) => Promise<PinnedPackage | undefined>;
  readonly workspace: string;
}

/**
 * Stdio servers declared in `.pml.json` `private_mcps` (same shape as registry metadata). An
 * `npx <package>[@<spec>]` entry without a `package` is pinned here (with `npx`): to the version
 * the lockfile pins when the spec still allows it, else to what npm resolves now; it then installs
 * and runs like any npm server, with {@link defaultNpmGrants} when the entry declares no
 * permissions.
 */
export class PrivateMcpSource implements MetadataSource {
  readonly #mcps: Readonly<Record<string, PrivateMcp>>;
  readonly #npx?: NpxPinning;
  readonly #parsed = new Map<string, Promise<DependencyMeta>>();
  /** The entries whose {@link PrivateMcpSource.#parsed} look-up has resolved. */
  readonly #resolved = new Map<string, DependencyMeta>();

  constructor(mcps: Readonly<Record<string, PrivateMcp>>, npx?: NpxPinning) {
    this.#mcps = mcps;
    this.#npx = npx;
  }

  list(): Promise<string[]> {
    return Promise.resolve(
      Object.entries(this.#mcps).filter(([, m]) => m.type === "stdio").map(([name]) => name),
    );
  }

  get(server: string): Promise<DependencyMeta | undefined> {
    const mcp = Object.hasOwn(this.#mcps, server) ? this.#mcps[server] : undefined;
    if (mcp?.type !== "stdio") return Promise.resolve(undefined);
    let meta = this.#parsed.get(server);
    if (!meta) {
      meta = this.#parse(server, mcp);
      this.#parsed.set(server, meta);
      meta.then(
        (m) => void this.#resolved.set(server, m),
        () => this.#parsed.delete(server), // a failed resolution is tried again
      );
    }
    return meta;
  }

  peek(server: string): DependencyMeta | null | undefined {
    const mcp = Object.hasOwn(this.#mcps, server) ? this.#mcps[server] : undefined;
    if (mcp?.type !== "stdio") return null;
    return this.#resolved.get(server);
  }

  async #parse(server: string, mcp: PrivateMcp): Promise<DependencyMeta> {
    const meta = parseStdioMetadata(server, mcp, `.pml.json private_mcps.${server}`);
    const npx = this.#npx && !meta.package ? npxPackage(meta.command, meta.args) : undefined;
    if (!npx || !this.#npx) return meta;
    const { name, version } = splitPackageSpec(npx.spec);
    const locked = await this.#npx.pinned(server);
    const exact = /^\d+\.\d+\.\d+/.test(version);
    const pkg = locked && locked.name === name && (!exact || locked.version === version)
      ? locked
      : await this.#npx.resolver.resolve(name, version);
    return {
      ...meta,
      args: [...npx.before, `${pkg.name}@${pkg.version}`, ...npx.after],
      package: pkg,
      permissions: mcp.permissions
        ? meta.permissions
        : { ...meta.permissions, ...defaultNpmGrants(npx.after, this.#npx.workspace) },
    };
  }
}

/** Several sources, the first that knows a server wins (private MCPs before any registry). */
export class ChainSource implements MetadataSource {
  readonly #sources: readonly MetadataSource[];

  constructor(sources: readonly MetadataSource[]) {
    this.#sources = sources;
  }

  async list(): Promise<string[]> {
    const all = new Set<string>();
    for (const s of this.#sources) for (const name of await s.list()) all.add(name);
    return [...all];
  }

  async get(server: string): Promise<DependencyMeta | undefined> {
    for (const s of this.#sources) {
      const meta = await s.get(server);
      if (meta) return meta;
    }
    return undefined;
  }

  peek(server: string): DependencyMeta | null | undefined {
    for (const s of this.#sources) {
      const meta = s.peek?.(server);
      if (meta !== null) return meta; // found, or this source must be asked first
    }
    return null;
  }
}
