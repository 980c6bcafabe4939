/**
 * Test helpers: the real `pml-server` app (SQLite in memory) as a registry, reached through an
 * injected `fetch` that can be switched off ("registry down") and records every request.
 * Only tests import this file.
 */
import { join } from "node:path";
import {
  type App,
  createApiKey,
  createApp,
  loadRoutingTable,
  SqliteStore,
  type Store,
} from "../../../server/mod.ts";

const ROUTING = join(import.meta.dirname!, "..", "..", "..", "..", "registry", "routing.json");

/** A registry server for tests. */
export interface TestRegistry {
  /** Base URL the package is configured with (nothing listens there: `fetch` calls the app). */
  readonly url: string;
  readonly app: App;
  readonly store: Store;
  /** Requests made, as `METHOD path?query`. */
  readonly requests: string[];
  /** When true, `fetch` fails like a refused connection. */
  down: boolean;
  readonly fetch: typeof fetch;
  /** Publishes `code` as `<org>.<project>.<ns>.<action>` through `POST /mcp`; returns the FQDN. */
  publish(
    ns: string,
    action: string,
    code: string,
    opts?: { org?: string; project?: string },
  ): Promise<string>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts a registry app with an API key created through the server's key API. */
export async function testRegistry(url = "https://registry.test"): Promise<TestRegistry> {
  const store = new SqliteStore(":memory:");
  await store.migrate();
  const app = createApp({ store, routing: await loadRoutingTable(ROUTING), cacheTtlMs: 0 });
  const { key } = await createApiKey(store, { label: "tests" });
  const reg: TestRegistry = {
    url,
    app,
    store,
    requests: [],
    down: false,
    fetch: async (input, init) => {
      const request = new Request(input, init);
      const u = new URL(request.url);
      reg.requests.push(`${request.method} ${u.pathname}${u.search}`);
      if (reg.down) {
        throw new TypeError(`error sending request for url (${request.url}): Connection refused`);
      }
      return await app(request);
    },
    async publish(ns, action, code, opts = {}) {
      const res = await app(
        new Request(`${url}/mcp`, {
          method: "POST",
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: JSON.stringify({
            org: opts.org ?? "acme",
            project: opts.project ?? "tools",
            namespace: ns,
            action,
            code,
          }),
        }),
      );
      const body = await res.json();
      if (res.status !== 201) {
        throw new Error(`publish failed: ${res.status} ${JSON.stringify(body)}`);
      }
      return body.fqdn;
    },
    async [Symbol.asyncDispose]() {
      await store.close();
    },
  };
  return reg;
}

/** A fetch that tries each registry by its URL prefix. */
export function routeFetch(...registries: TestRegistry[]): typeof fetch {
  return (input, init) => {
    const url = new Request(input, init).url;
    const reg = registries.find((r) => url.startsWith(r.url + "/"));
    if (!reg) return Promise.reject(new TypeError(`no test registry for ${url}`));
    return reg.fetch(input, init);
  };
}
