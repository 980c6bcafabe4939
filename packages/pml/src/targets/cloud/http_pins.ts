/**
 * The lockfile guard of http MCP servers (proxied by the PML server): before a call, the server's
 * registry metadata (`pml.mcp.<ns>.server`, type `http`) is pinned in `.pml/mcp.lock` with its
 * `proxyTo` and `envRequired`, and so are its tool definitions: those of the metadata (from which
 * the server builds the list it serves), or, with the registries unreachable, the ones the cloud
 * listed. A difference from the pin is returned for an `integrity` approval.
 * Namespaces with no http entry (the platform's `json`, `math`, …) are not pinned here.
 *
 * @module
 */
import { PmlError } from "../../errors.ts";
import type { ChangedPin, McpPins, ToolDefinition, Unapproved } from "../../registry/mcp_pins.ts";
import { isUnreachable, type RegistryClient } from "../../registry/registry_client.ts";
import type { ToolInfo } from "../target.ts";

export type { ChangedPin };

interface HttpMeta {
  readonly fqdn: string;
  readonly document: Record<string, unknown>;
  readonly proxyTo: string;
  readonly envRequired: string[];
  /** The definitions the server lists for the namespace (its catalog is built from them). */
  readonly tools: ToolDefinition[];
}

/** See the module documentation. */
export class HttpPins {
  readonly #client: RegistryClient;
  readonly #pins: McpPins;
  readonly #now: () => number;
  readonly #meta = new Map<string, { meta: Promise<HttpMeta | undefined>; until: number }>();
  /** Namespaces with no http entry and no pin (the platform's own tools). */
  readonly #notHttp = new Set<string>();
  /** Namespaces the registries answered about (not only unreachable). */
  readonly #answered = new Set<string>();
  /** What was found unchanged, per namespace: the metadata and the listed definitions. */
  readonly #verified = new Map<string, { meta?: HttpMeta; tools: string }>();

  constructor(deps: { client: RegistryClient; pins: McpPins; now?: () => number }) {
    this.#client = deps.client;
    this.#pins = deps.pins;
    this.#now = deps.now ?? Date.now;
  }

  /**
   * Checks (recording on first use) the pin of namespace `ns` against its registry metadata and
   * `listed`, the cloud's definitions of its tools. Returns the changes, empty when none.
   */
  async check(ns: string, listed: readonly ToolInfo[]): Promise<ChangedPin[]> {
    const meta = await this.#metadata(ns);
    const name = `pml.mcp.${ns}.server`;
    if (!meta && this.#notHttp.has(ns)) return [];
    if (!meta && !(await this.#pins.locked(name))) {
      // The registries said it is no http MCP (the platform's json, math, …): nothing to pin.
      if (this.#answered.has(ns)) this.#notHttp.add(ns);
      return [];
    }
    const tools = JSON.stringify(listed.map((t) => [t.id, t.description, t.inputSchema]));
    const seen = this.#verified.get(ns);
    if (seen && seen.meta === meta && seen.tools === tools) return [];
    const changes: ChangedPin[] = [];
    if (meta) {
      const m = await this.#pins.checkMetadata(name, {
        fqdn: meta.fqdn,
        type: "http",
        routing: "server",
        proxyTo: meta.proxyTo,
        envRequired: meta.envRequired,
        document: meta.document,
      });
      if (m.kind === "changed") changes.push(m);
    }
    const t = await this.#pins.checkTools(
      name,
      meta ? meta.tools : listed.map((info) => ({
        name: info.id.slice(info.id.indexOf(":") + 1),
        description: info.description,
        inputSchema: info.inputSchema,
      })),
    );
    if (t.kind === "changed") changes.push(t);
    if (!changes.length) this.#verified.set(ns, { meta, tools });
    return changes;
  }

  /**
   * True when namespace `ns` is an http MCP server of a registry: pinned as one, or described as
   * one by the registries (the answer is kept for its max-age and reused by the call's check).
   * False for the platform's own namespaces, and while the registries are unreachable for one
   * never pinned.
   */
  async isHttpMcp(ns: string): Promise<boolean> {
    if ((await this.#pins.locked(`pml.mcp.${ns}.server`))?.type === "http") return true;
    if (this.#notHttp.has(ns)) return false;
    return (await this.#metadata(ns).catch(() => undefined)) !== undefined;
  }

  /**
   * The `listed` tools (by id) whose definition differs from the one pinned for their server
   * (`changed`), or that appeared after it was pinned (`added`).
   */
  async changedTools(listed: readonly ToolInfo[]): Promise<Unapproved> {
    const byNs = new Map<string, ToolInfo[]>();
    for (const t of listed) {
      const ns = t.id.slice(0, t.id.indexOf(":"));
      byNs.set(ns, [...(byNs.get(ns) ?? []), t]);
    }
    const changed: Unapproved = new Map();
    for (const [ns, tools] of byNs) {
      const found = await this.#pins.changedTools(
        `pml.mcp.${ns}.server`,
        tools.map((t) => ({
          name: t.id.slice(ns.length + 1),
          description: t.description,
          inputSchema: t.inputSchema,
        })),
      );
      for (const [action, state] of found) changed.set(`${ns}:${action}`, state);
    }
    return changed;
  }

  /** The http metadata of `ns` from the registries (reused for its max-age); none when offline. */
  #metadata(ns: string): Promise<HttpMeta | undefined> {
    const known = this.#meta.get(ns);
    if (known && known.until > this.#now()) return known.meta;
    // Concurrent calls share one look-up; it is kept until its answer says how long to keep it.
    const meta = this.#fetchMetadata(ns);
    this.#meta.set(ns, { meta, until: Infinity });
    meta.catch(() => this.#meta.delete(ns));
    return meta;
  }

  async #fetchMetadata(ns: string): Promise<HttpMeta | undefined> {
    const keep = (meta: HttpMeta | undefined, ms: number) => {
      if (ms > 0) this.#answered.add(ns);
      else this.#answered.delete(ns);
      this.#meta.set(ns, { meta: Promise.resolve(meta), until: this.#now() + ms });
      return meta;
    };
    for (const registry of this.#client.registries) {
      try {
        const f = await this.#client.fetchEntry(registry, `pml.mcp.${ns}.server`);
        let meta: HttpMeta | undefined;
        if (f.type === "http") {
          const raw = JSON.parse(new TextDecoder().decode(f.bytes!)) as Record<string, unknown>;
          const document = { ...raw };
          delete document.fqdn; // the served 4-part name: not part of what is pinned
          meta = {
            fqdn: f.fqdn,
            document,
            proxyTo: String(raw.proxyTo ?? ""),
            envRequired: Array.isArray(raw.envRequired) ? raw.envRequired.map(String) : [],
            tools: (Array.isArray(raw.tools) ? raw.tools : []).map((t) => ({
              name: String(t?.name ?? "").slice(String(t?.name ?? "").indexOf(":") + 1),
              description: String(t?.description ?? ""),
              inputSchema: t?.inputSchema && typeof t.inputSchema === "object" ? t.inputSchema : {},
              ...(t?.annotations && typeof t.annotations === "object"
                ? { annotations: t.annotations }
                : {}),
            })),
          };
        }
        return keep(meta, Math.max(f.maxAgeMs, 1000));
      } catch (err) {
        if (err instanceof PmlError && err.code === "REGISTRY_NOT_FOUND") continue;
        // Unreachable: the tool definitions are still checked; asked again on the next call.
        if (isUnreachable(err)) return keep(undefined, 0);
        throw err;
      }
    }
    return keep(undefined, 60_000);
  }
}
