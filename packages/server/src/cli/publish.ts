/**
 * `pml-server publish <server.json>`: a registry entry from the MCP Registry's own format
 * (docs/server.md). The document's npm package (stdio) becomes a stdio metadata file pinned to
 * the exact version and `sha512` npm resolves; its remote becomes an http metadata file whose
 * tools are read from the server now (headers from the publisher's environment, never stored).
 * The file is written to `<registry-dir>/mcp/<name>.json` and the registry is synced, so the entry
 * is served at once and re-seeded on every start like the other metadata files.
 *
 * @module
 */
import { join, resolve } from "node:path";
import {
  isServerJson,
  parseServerJson,
  serverJsonEntry,
} from "../../../pml/src/import/server_json.ts";
import { toPrivateMcp } from "../../../pml/src/import/to_private_mcp.ts";
import { type NpmResolver, NpmViewResolver } from "../../../pml/src/deps/npm_resolver.ts";
import { connectRemote } from "../../../pml/src/targets/remote/remote_session.ts";
import { loadRoutingTable } from "../registry/routing_table.ts";
import { seedRegistry } from "../registry/seed.ts";
import { FQDN_PART } from "../registry/fqdn.ts";
import { openStore } from "../store/open_store.ts";
import type { ServerConfig } from "./config.ts";
import type { CliIo } from "./io.ts";
import { UsageError } from "./usage.ts";

/** What publishing needs besides the config (injectable for tests). */
export interface PublishDeps {
  readonly resolver?: NpmResolver;
  readonly fetch?: typeof fetch;
}

/** The registry metadata file `doc` becomes, and its name. */
export async function metadataFromServerJson(
  raw: unknown,
  file: string,
  deps: PublishDeps & { env: (name: string) => string | undefined; cwd: string },
): Promise<{ name: string; metadata: Record<string, unknown> }> {
  if (!isServerJson(raw)) {
    throw new UsageError(`${file} is not a server.json (no "name" with "packages" or "remotes")`);
  }
  const doc = parseServerJson(raw, file);
  const { entry, missing } = serverJsonEntry(doc, file);
  if (missing.length) {
    throw new Error(
      `${file} leaves ${missing.join(", ")} open: a registry entry cannot ask for it`,
    );
  }
  const name = entry.name.toLowerCase().replace(/[^a-z0-9_-]+/g, "-");
  if (!FQDN_PART.test(name)) throw new Error(`Cannot publish "${doc.name}": "${name}" is no name`);
  const server = await toPrivateMcp(entry, name, {
    resolver: deps.resolver ?? new NpmViewResolver({ env: envOf(deps.env) }),
    workspace: deps.cwd,
  });
  const mcp = server.mcp as Record<string, unknown> & {
    permissions?: { read?: string[]; write?: string[]; env?: string[] };
    headers?: Record<string, string>;
    envRequired?: string[];
  };
  if (server.kind === "npm") {
    return {
      name,
      metadata: {
        type: "stdio",
        description: doc.description,
        install: mcp.install,
        package: mcp.package,
        permissions: {
          read: mcp.permissions?.read ?? [],
          write: mcp.permissions?.write ?? [],
          net: [],
          env: mcp.permissions?.env ?? [],
        },
        // No list: the client reads the server's own definitions on first start and pins them.
        tools: [],
        warnings: {},
      },
    };
  }
  if (server.kind !== "remote") {
    throw new Error(`${file}: PML publishes npm packages and remotes, not "${entry.command}"`);
  }
  const headers = Object.entries(mcp.headers ?? {});
  if (headers.length > 1) {
    throw new Error(
      `${file}: the remote needs ${headers.length} headers; a registry http entry carries one key`,
    );
  }
  const envRequired = mcp.envRequired ?? [];
  const env = Object.fromEntries(
    envRequired.map((n) => [n, deps.env(n)]).filter(([, v]) => v !== undefined),
  ) as Record<string, string>;
  const unset = envRequired.filter((n) => env[n] === undefined);
  if (unset.length) {
    throw new Error(
      `Cannot list the tools of ${String(mcp.proxyTo)}: set ${unset.join(", ")} in the ` +
        `environment of pml-server publish (used for this listing only, never stored)`,
    );
  }
  const session = await connectRemote(
    {
      server: name,
      description: doc.description,
      proxyTo: String(mcp.proxyTo),
      transport: mcp.transport === "sse" ? "sse" : "streamable-http",
      headers: mcp.headers ?? {},
      envRequired,
    },
    env,
    { fetch: deps.fetch, timeoutMs: 30_000 },
  );
  try {
    const tools = await session.listTools(30_000);
    const [header] = headers;
    return {
      name,
      metadata: {
        type: "http",
        description: doc.description,
        proxyTo: mcp.proxyTo,
        envRequired,
        ...(header
          ? {
            byok: {
              env: envRequired[0],
              header: header[0],
              format: header[1].replace(`{${envRequired[0]}}`, "{key}"),
            },
          }
          : {}),
        tools: tools.map((t) => ({
          name: `${name}:${t.name}`,
          description: t.description ?? "",
          inputSchema: t.inputSchema,
        })),
      },
    };
  } finally {
    await session.close();
  }
}

function envOf(env: (name: string) => string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of ["PATH", "HOME", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY"]) {
    const v = env(n);
    if (v !== undefined) out[n] = v;
  }
  return out;
}

/** `pml-server publish <server.json>`: writes the metadata file and syncs the registry. */
export async function publishCommand(
  config: ServerConfig,
  args: readonly string[],
  io: CliIo,
  deps: PublishDeps = {},
): Promise<number> {
  if (args.length !== 1) throw new UsageError(`"publish" takes one server.json path`);
  const file = resolve(io.cwd, args[0]);
  let raw: unknown;
  try {
    raw = JSON.parse(await Deno.readTextFile(file));
  } catch (err) {
    throw new Error(`Cannot read ${file}: ${(err as Error).message}`);
  }
  const { name, metadata } = await metadataFromServerJson(raw, file, {
    ...deps,
    env: io.env,
    cwd: io.cwd,
  });
  const path = join(config.registryDir, "mcp", `${name}.json`);
  await Deno.mkdir(join(config.registryDir, "mcp"), { recursive: true });
  await Deno.writeTextFile(path, JSON.stringify(metadata, null, 2) + "\n");
  const store = await openStore(config);
  try {
    const routing = await loadRoutingTable(join(config.registryDir, "routing.json"));
    await seedRegistry(store, { registryDir: config.registryDir, routing });
    const entry = await store.getEntry(`pml.mcp.${name}.server`);
    io.stdout(`Published pml.mcp.${name}.server (${metadata.type}) from ${file}`);
    io.stdout(`  metadata: ${path}`);
    if (entry) io.stdout(`  fqdn: ${entry.name}.${entry.hash.slice(0, 4)}`);
    return 0;
  } finally {
    await store.close();
  }
}
