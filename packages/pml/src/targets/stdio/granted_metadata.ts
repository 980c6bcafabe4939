import type { DependencyMeta, MetadataSource } from "../../deps/metadata.ts";
import { withNetGrants } from "../../deps/grants.ts";

/**
 * The metadata of stdio servers, with the network hosts `.pml.json` `sandbox.net` grants added to
 * what each declares: every host is reached through the sandbox's proxy, which lets only those
 * through, whatever runs inside (an npm server under Deno or a raw command). One granted object
 * per object of the source: what was checked for it is known by identity.
 */
export class GrantedMetadata {
  readonly #source: MetadataSource;
  readonly #net: readonly string[];
  readonly #granted = new WeakMap<DependencyMeta, DependencyMeta>();

  constructor(source: MetadataSource, net: readonly string[]) {
    this.#source = source;
    this.#net = net;
  }

  async get(server: string): Promise<DependencyMeta | undefined> {
    const known = this.now(server);
    if (known !== undefined) return known ?? undefined;
    const meta = await this.#source.get(server);
    return meta && this.#withGrants(meta);
  }

  /** {@link GrantedMetadata.get} when the source answers without waiting (`MetadataSource.peek`). */
  now(server: string): DependencyMeta | null | undefined {
    const meta = this.#source.peek?.(server);
    return meta && this.#withGrants(meta);
  }

  #withGrants(meta: DependencyMeta): DependencyMeta {
    let granted = this.#granted.get(meta);
    if (!granted) this.#granted.set(meta, granted = withNetGrants(meta, this.#net));
    return granted;
  }
}
