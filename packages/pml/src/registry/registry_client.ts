/**
 * HTTP client of the registry protocol (DESIGN §7): catalog look-ups (`GET /mcp?tool=`) and entry
 * fetches (`GET /mcp/{fqdn}`) with `If-None-Match`, following the 302 of a 4-part name to the
 * hashed FQDN (same origin only). The bytes are checked against the FQDN hash and the ETag; the
 * lockfile check is the loader's job. `fetch` is injected (real default).
 *
 * @module
 */
import { errorMessage, PmlError } from "../errors.ts";
import type { Routing } from "../routing/routing.ts";
import { parseFqdn } from "./fqdn.ts";
import { type Digest, digest } from "./integrity.ts";

/** How an entry is delivered. */
export type EntryType = "deno" | "stdio" | "http";

/** One catalog item. */
export interface CatalogItem {
  readonly registry: string;
  readonly fqdn: string;
  readonly type: EntryType;
  readonly routing: Routing;
  readonly description: string;
  readonly tools: readonly string[];
}

/** An entry fetched from a registry: `bytes` absent when the server answered 304. */
export interface FetchedEntry {
  readonly registry: string;
  /** 5-part FQDN of the served version. */
  readonly fqdn: string;
  readonly name: string;
  readonly type: EntryType;
  readonly routing: Routing;
  readonly bytes?: Uint8Array;
  /** Digest computed from `bytes` (200), or the ETag hex the server confirmed (304). */
  readonly hex: string;
  readonly digest?: Digest;
  /** How long the answer may be reused without asking again (Cache-Control max-age). */
  readonly maxAgeMs: number;
}

/** Options of {@link RegistryClient}. */
export interface RegistryClientOptions {
  /** Registry base URLs, in priority order (first match wins). */
  readonly registries: readonly string[];
  readonly fetch?: typeof fetch;
  /** Per request (default 10 s). */
  readonly timeoutMs?: number;
  /**
   * After a registry let a request time out, how long further requests to it fail at once with
   * that error instead of waiting again (default 30 s, like the cloud's tool list). A refused
   * connection fails fast by itself and does not count.
   */
  readonly silentRetryMs?: number;
  readonly now?: () => number;
}

const MAX_REDIRECTS = 3;
const MAX_BYTES = 4 * 1024 * 1024;

/** See the module documentation. */
export class RegistryClient {
  readonly registries: readonly string[];
  readonly #fetch: typeof fetch;
  readonly #timeoutMs: number;
  readonly #silentRetryMs: number;
  readonly #now: () => number;
  /** Per origin: until when it is taken as silent, and the timeout that said so. */
  readonly #silent = new Map<string, { until: number; error: PmlError }>();

  constructor(opts: RegistryClientOptions) {
    this.registries = opts.registries.map((r) => r.replace(/\/+$/, ""));
    this.#fetch = opts.fetch ?? globalThis.fetch;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.#silentRetryMs = opts.silentRetryMs ?? 30_000;
    this.#now = opts.now ?? Date.now;
  }

  /**
   * Catalog items of the first registry that knows `toolId` (type `deno` unless given).
   * Unreachable registries are skipped; when none answered at all, `REGISTRY_UNREACHABLE`.
   */
  async findTool(toolId: string, type: EntryType = "deno"): Promise<CatalogItem | undefined> {
    const params = new URLSearchParams({ tool: toolId, type });
    return (await this.#firstCatalog(params, (item) => item.tools.includes(toolId)))[0];
  }

  /** Catalog items (of the first registry with any) providing tools of namespace `ns`. */
  async findNamespace(ns: string, type: EntryType = "deno"): Promise<CatalogItem[]> {
    const params = new URLSearchParams({ q: ns, type, limit: "100" });
    return await this.#firstCatalog(
      params,
      (item) => item.tools.some((t) => t.split(":")[0] === ns),
    );
  }

  /** Catalog items of one type (first registry with any; first page of 100). */
  async findType(type: EntryType): Promise<CatalogItem[]> {
    return await this.#firstCatalog(new URLSearchParams({ type, limit: "100" }), () => true);
  }

  async #firstCatalog(
    params: URLSearchParams,
    keep: (i: CatalogItem) => boolean,
  ): Promise<CatalogItem[]> {
    const failures: PmlError[] = [];
    for (const registry of this.registries) {
      let res: Response;
      try {
        res = await this.#get(`${registry}/mcp?${params}`, {});
      } catch (err) {
        failures.push(err as PmlError);
        continue;
      }
      const body = await readJson(res, registry);
      if (!res.ok) throw badStatus(res, body, `${registry}/mcp?${params}`);
      const items = ((body as { items?: unknown[] }).items ?? []).map((i) => ({
        ...(i as Omit<CatalogItem, "registry">),
        tools: (i as { tools?: string[] }).tools ?? [],
        registry,
      })).filter(keep);
      if (items.length) return items;
    }
    if (failures.length && failures.length === this.registries.length) throw unreachable(failures);
    return [];
  }

  /**
   * Fetches `fqdn` (4 or 5 parts) from `registry`, sending `If-None-Match` when `knownHex` is
   * given. Checks that the received bytes hash to the FQDN hash and the ETag.
   */
  async fetchEntry(registry: string, fqdn: string, knownHex?: string): Promise<FetchedEntry> {
    parseFqdn(fqdn);
    const base = new URL(registry);
    let url = `${registry}/mcp/${fqdn}`;
    const headers: Record<string, string> = knownHex ? { "if-none-match": `"${knownHex}"` } : {};
    for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
      const res = await this.#get(url, headers);
      if (res.status === 302 || res.status === 301 || res.status === 307) {
        await res.body?.cancel();
        const location = res.headers.get("location");
        const next = location ? new URL(location, url) : undefined;
        if (!next || next.origin !== base.origin) {
          throw new PmlError(
            "REGISTRY_BAD_RESPONSE",
            `Registry "${registry}" redirected "${fqdn}" to "${location}", which is not on the registry's origin`,
          );
        }
        url = next.href;
        continue;
      }
      const served = decodeURIComponent(new URL(url).pathname.split("/").pop()!);
      if (res.status === 304) {
        await res.body?.cancel();
        return this.#entry(registry, served, res, knownHex!, undefined);
      }
      if (!res.ok) throw badStatus(res, await readJson(res, registry), url);
      const bytes = new Uint8Array(await res.arrayBuffer());
      if (bytes.byteLength > MAX_BYTES) {
        throw new PmlError(
          "REGISTRY_BAD_RESPONSE",
          `Registry entry "${served}" is larger than ${MAX_BYTES} bytes`,
        );
      }
      const d = await digest(bytes);
      const etag = res.headers.get("etag")?.replace(/^W\//, "").replaceAll('"', "");
      const hash = parseFqdn(served).hash;
      if ((hash && !d.hex.startsWith(hash)) || (etag && etag !== d.hex)) {
        throw new PmlError(
          "REGISTRY_HASH_MISMATCH",
          `Registry "${registry}" served bytes for "${served}" whose sha256 is ${
            d.hex.slice(0, 12)
          }…, which matches neither the FQDN hash "${hash}" nor the ETag; refusing them`,
          { details: { fqdn: served, sha256: d.hex, etag } },
        );
      }
      return this.#entry(registry, served, res, d.hex, bytes, d);
    }
    throw new PmlError(
      "REGISTRY_BAD_RESPONSE",
      `Registry "${registry}": too many redirects for "${fqdn}"`,
    );
  }

  #entry(
    registry: string,
    fqdn: string,
    res: Response,
    hex: string,
    bytes?: Uint8Array,
    d?: Digest,
  ): FetchedEntry {
    const parsed = parseFqdn(fqdn);
    const type = res.headers.get("x-pml-type") as EntryType | null;
    const routing = res.headers.get("x-pml-routing") === "server" ? "server" : "client";
    const maxAge = /max-age=(\d+)/.exec(res.headers.get("cache-control") ?? "");
    return {
      registry,
      fqdn,
      name: parsed.name,
      type: type === "stdio" || type === "http" ? type : "deno",
      routing,
      bytes,
      hex,
      digest: d,
      maxAgeMs: maxAge ? Number(maxAge[1]) * 1000 : 0,
    };
  }

  async #get(url: string, headers: Record<string, string>): Promise<Response> {
    const origin = URL.canParse(url) ? new URL(url).origin : url;
    const silent = this.#silent.get(origin);
    if (silent && silent.until > this.#now()) {
      throw new PmlError(
        "REGISTRY_TIMEOUT",
        `The registry at "${origin}" did not answer within ${this.#timeoutMs} ms a moment ago ` +
          `(${silent.error.message}); it is not asked again for ${
            Math.round(this.#silentRetryMs / 1000)
          } s`,
        { cause: silent.error, details: { url } },
      );
    }
    try {
      const res = await this.#fetch(url, {
        headers,
        redirect: "manual",
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      this.#silent.delete(origin);
      return res;
    } catch (err) {
      const timeout = err instanceof DOMException && err.name === "TimeoutError";
      const error = new PmlError(
        timeout ? "REGISTRY_TIMEOUT" : "REGISTRY_UNREACHABLE",
        timeout
          ? `The registry did not answer "GET ${url}" within ${this.#timeoutMs} ms`
          : `Cannot reach the registry at "${url}": ${errorMessage(err)}`,
        { cause: err, details: { url } },
      );
      if (timeout) this.#silent.set(origin, { until: this.#now() + this.#silentRetryMs, error });
      throw error;
    }
  }
}

/** True for errors that mean "the registry could not be asked" (offline fallback applies). */
export function isUnreachable(err: unknown): err is PmlError {
  return err instanceof PmlError &&
    (err.code === "REGISTRY_UNREACHABLE" || err.code === "REGISTRY_TIMEOUT");
}

function unreachable(failures: PmlError[]): PmlError {
  return new PmlError(
    failures.some((f) => f.code === "REGISTRY_TIMEOUT")
      ? "REGISTRY_TIMEOUT"
      : "REGISTRY_UNREACHABLE",
    failures.map((f) => f.message).join("; "),
    { cause: failures[0] },
  );
}

async function readJson(res: Response, registry: string): Promise<Record<string, unknown>> {
  const text = await res.text();
  try {
    const v = JSON.parse(text);
    return v && typeof v === "object" ? v : {};
  } catch {
    if (res.ok) {
      throw new PmlError(
        "REGISTRY_BAD_RESPONSE",
        `Registry "${registry}" answered ${res.status} with a body that is not JSON`,
      );
    }
    return {};
  }
}

function badStatus(res: Response, body: Record<string, unknown>, url: string): PmlError {
  const message = typeof body.message === "string" ? body.message : `HTTP ${res.status}`;
  if (body.error === "not_found") {
    return new PmlError("REGISTRY_NOT_FOUND", `Registry: ${message} (GET ${url})`, {
      details: { url },
    });
  }
  if (body.error === "hash_mismatch") {
    return new PmlError("REGISTRY_HASH_MISMATCH", `Registry: ${message} (GET ${url})`, {
      details: { url, currentFqdn: body.currentFqdn },
    });
  }
  return new PmlError(
    "REGISTRY_BAD_RESPONSE",
    `Registry answered ${res.status} to GET ${url}: ${message}`,
    {
      details: { url, status: res.status },
    },
  );
}
