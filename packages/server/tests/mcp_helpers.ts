/** Shared setup of the MCP endpoint tests: a seeded app with the MCP handler and SDK clients. */
import { Client } from "../src/mcp/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../src/mcp/sdk/http_client.ts";
import { createMcpHandler, type McpHandlerDeps } from "../src/mcp/mcp_handler.ts";
import { join } from "node:path";
import { loadRoutingTable } from "../src/registry/routing_table.ts";
import { SqliteStore } from "../src/store/sqlite_store.ts";
import type { Store } from "../src/store/store.ts";
import { BASE, REPO_REGISTRY, type TestServer, testServer } from "./helpers.ts";

/** A test server seeded from `registryDir` (default: the repository's registry) with MCP on. */
export async function mcpTestServer(
  options: { registryDir?: string; store?: Store; handler?: Partial<McpHandlerDeps> } = {},
): Promise<TestServer> {
  const store = options.store ?? new SqliteStore(":memory:");
  const registryDir = options.registryDir ?? REPO_REGISTRY;
  const routing = await loadRoutingTable(join(registryDir, "routing.json"));
  const mcp = createMcpHandler({ store, cacheTtlMs: 0, routing, ...options.handler });
  const server = await testServer({
    registryDir,
    store,
    deps: { mcp },
  });
  return {
    ...server,
    async close() {
      await mcp.close();
      await server.close();
    },
  };
}

/**
 * An SDK client connected to `POST /mcp`: in process through `app` (the transport's fetch calls
 * the handler) or over the network when `url` is given. In process, `close()` also waits for the
 * requests still running in the app (the SDK's background GET), so no request outlives a test.
 */
export async function connectClient(
  target: { app?: (request: Request) => Promise<Response>; url?: string },
  headers: Record<string, string>,
): Promise<Client> {
  const app = target.app;
  const running = new Set<Promise<Response>>();
  const inProcess = (input: string | URL | Request, init?: RequestInit) => {
    const response = app!(new Request(input, init));
    running.add(response);
    response.finally(() => running.delete(response)).catch(() => {});
    return response;
  };
  const transport = new StreamableHTTPClientTransport(new URL(target.url ?? `${BASE}/mcp`), {
    requestInit: { headers },
    ...(app ? { fetch: inProcess } : {}),
  });
  const client = new Client({ name: "pml-test", version: "0.0.0" });
  await client.connect(transport);
  const close = client.close.bind(client);
  client.close = async () => {
    await close();
    await Promise.allSettled([...running]);
  };
  return client;
}

/** `X-PML-BYOK` value for `keys`. */
export function byokHeader(keys: Record<string, string>): string {
  return btoa(JSON.stringify(keys));
}

/** The parts of a `CallToolResult` the tests read. */
export interface ToolResult {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent: Record<string, unknown> & {
    code?: string;
    message: string;
    results?: { id: string; routing: string; kind: string; inputSchema: unknown }[];
  };
}

/** `client.callTool` typed for the tests. */
export async function callTool(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<ToolResult> {
  return await client.callTool({ name, arguments: args }) as unknown as ToolResult;
}
