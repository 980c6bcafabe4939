/** Shared setup of the server tests: a real `createApp()` on an in-memory SQLite store. */
import { join } from "node:path";
import { type AppDeps, createApp } from "../src/app.ts";
import { createApiKey } from "../src/auth/keys.ts";
import { loadRoutingTable, type RoutingTable } from "../src/registry/routing_table.ts";
import { seedRegistry } from "../src/registry/seed.ts";
import { SqliteStore } from "../src/store/sqlite_store.ts";
import type { Store } from "../src/store/store.ts";

/** The test registry: std module `demo`, stdio `memory`, http `tavily`. */
export const FIXTURE_REGISTRY = join(import.meta.dirname!, "fixtures/registry");
/** The repository's real registry folder. */
export const REPO_REGISTRY = join(import.meta.dirname!, "../../../registry");
/** Base URL of requests made without a socket. */
export const BASE = "http://pml.test";

/** A seeded app, its store and a valid API key. */
export interface TestServer {
  readonly app: (request: Request) => Promise<Response>;
  readonly store: Store;
  readonly routing: RoutingTable;
  readonly key: string;
  /** `app(new Request(BASE + path, init))`. */
  request(path: string, init?: RequestInit): Promise<Response>;
  /** POST /mcp with the key and a JSON body (strings and bytes are sent as is). */
  publish(body: unknown, headers?: Record<string, string>): Promise<Response>;
  close(): Promise<void>;
}

/** Builds a seeded test server; `deps` overrides app dependencies. */
export async function testServer(
  options: { registryDir?: string; store?: Store; deps?: Partial<AppDeps> } = {},
): Promise<TestServer> {
  const registryDir = options.registryDir ?? FIXTURE_REGISTRY;
  const store = options.store ?? new SqliteStore(":memory:");
  await store.migrate();
  const routing = await loadRoutingTable(join(registryDir, "routing.json"));
  await seedRegistry(store, { registryDir, routing });
  const { key } = await createApiKey(store, { label: "test" });
  const app = createApp({ store, routing, ...options.deps });
  const request = (path: string, init?: RequestInit) => app(new Request(BASE + path, init));
  return {
    app,
    store,
    routing,
    key,
    request,
    publish: (body, headers = {}) =>
      request("/mcp", {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
        body: typeof body === "string" || body instanceof Uint8Array
          ? body as BodyInit
          : JSON.stringify(body),
      }),
    close: () => store.close(),
  };
}

/** SHA-256 hex of bytes or text. */
export async function sha256(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as BufferSource));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A valid capability module exporting `action`. */
export function capabilityCode(action: string, body = "return args;"): string {
  return `export async function ${action}(args: Record<string, unknown>) {\n  ${body}\n}\n`;
}
