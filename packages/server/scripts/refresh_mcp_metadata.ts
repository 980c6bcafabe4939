/**
 * Regenerates `registry/mcp/<server>.json` for the npm MCP servers pinned in the root
 * `package.json`: spawns each one from `node_modules` (via the SDK's stdio client), asks
 * `tools/list`, and takes the package's `sha512` integrity from `package-lock.json`.
 * `tavily.json` is written by hand and left alone. The `everything-http` test fixture (the same
 * server over HTTP on loopback) goes to `packages/server/tests/fixtures/`: fixtures are never seeded.
 *
 *   deno run -A packages/server/scripts/refresh_mcp_metadata.ts
 *
 * @module
 */
// @ts-types="../../../node_modules/@modelcontextprotocol/sdk/dist/esm/client/index.d.ts"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="../../../node_modules/@modelcontextprotocol/sdk/dist/esm/client/stdio.d.ts"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { join } from "node:path";

const root = join(import.meta.dirname!, "../../..");
const REGISTRY = join(root, "registry/mcp");
const FIXTURES = join(root, "packages/server/tests/fixtures");
const lock = JSON.parse(await Deno.readTextFile(join(root, "package-lock.json")));

interface ServerSpec {
  server: string;
  npm: string;
  description: string;
  spawnArgs: string[];
  installArgs: string[];
  permissions: { read: string[]; write: string[]; net: string[]; env: string[] };
  warnings: Record<string, unknown>;
  /** A test fixture: the same server proxied over HTTP (written beside the server's tests). */
  http?: { server: string; proxyTo: string; description: string };
}

const SPECS: ServerSpec[] = [
  {
    server: "memory",
    npm: "@modelcontextprotocol/server-memory",
    description:
      "Knowledge graph memory: entities, relations and observations kept in a JSONL file",
    spawnArgs: [],
    installArgs: [],
    permissions: {
      read: ["${packageDir}"],
      write: ["${packageDir}"],
      net: [],
      env: ["MEMORY_FILE_PATH"],
    },
    warnings: {
      writesFiles: ["memory.jsonl next to the installed package, or the path in MEMORY_FILE_PATH"],
    },
  },
  {
    server: "filesystem",
    npm: "@modelcontextprotocol/server-filesystem",
    description: "Read, write, search and list files inside the allowed directories",
    spawnArgs: ["."],
    installArgs: ["${workspace}"],
    permissions: { read: ["${workspace}"], write: ["${workspace}"], net: [], env: [] },
    warnings: {},
  },
  {
    server: "everything",
    npm: "@modelcontextprotocol/server-everything",
    description: "Reference MCP server exercising every protocol feature (test tool)",
    spawnArgs: ["stdio"],
    installArgs: ["stdio"],
    permissions: { read: [], write: [], net: [], env: [] },
    warnings: { testServer: "Meant for testing MCP clients, not for real work" },
    http: {
      server: "everything-http",
      proxyTo: "http://127.0.0.1:3001/mcp",
      description:
        "The everything reference server over Streamable HTTP on 127.0.0.1:3001 (local tests: `npx @modelcontextprotocol/server-everything streamableHttp`)",
    },
  },
  {
    server: "sequential-thinking",
    npm: "@modelcontextprotocol/server-sequential-thinking",
    description: "Structured step-by-step thinking with revisions and branches",
    spawnArgs: [],
    installArgs: [],
    permissions: { read: [], write: [], net: [], env: ["DISABLE_THOUGHT_LOGGING"] },
    warnings: {},
  },
];

for (const spec of SPECS) {
  const locked = lock.packages[`node_modules/${spec.npm}`];
  if (!locked?.integrity) throw new Error(`"${spec.npm}" is not in package-lock.json`);
  const pkg = JSON.parse(
    await Deno.readTextFile(join(root, "node_modules", spec.npm, "package.json")),
  );
  const bin = join(
    root,
    "node_modules",
    spec.npm,
    Object.values(pkg.bin as Record<string, string>)[0],
  );
  const client = new Client({ name: "pml-refresh-mcp-metadata", version: "0.1.0" });
  await client.connect(
    new StdioClientTransport({
      command: "node",
      args: [bin, ...spec.spawnArgs],
      cwd: root,
      env: {
        PATH: Deno.env.get("PATH") ?? "",
        MEMORY_FILE_PATH: join(Deno.makeTempDirSync(), "m.jsonl"),
      },
      stderr: "ignore",
    }),
  );
  const { tools } = await client.listTools();
  await client.close();
  const toolsOf = (prefix: string) =>
    tools.map((tool) => ({
      name: `${prefix}:${tool.name}`,
      description: tool.description ?? "",
      inputSchema: tool.inputSchema,
    }));
  const stdio = {
    type: "stdio",
    description: spec.description,
    install: {
      command: "npx",
      args: ["-y", `${spec.npm}@${locked.version}`, ...spec.installArgs],
      envRequired: [],
    },
    package: { name: spec.npm, version: locked.version, integrity: locked.integrity },
    permissions: spec.permissions,
    tools: toolsOf(spec.server),
    warnings: spec.warnings,
  };
  await write(spec.server, REGISTRY, stdio);
  if (spec.http) {
    await write(spec.http.server, FIXTURES, {
      type: "http",
      description: spec.http.description,
      proxyTo: spec.http.proxyTo,
      envRequired: [],
      tools: toolsOf(spec.http.server),
    });
  }
}

async function write(server: string, dir: string, metadata: unknown): Promise<void> {
  const path = join(dir, `${server}.json`);
  await Deno.writeTextFile(path, JSON.stringify(metadata, null, 2) + "\n");
  console.log(`wrote ${path}`);
}

// Keep the generated files in the repository's formatting.
await new Deno.Command(Deno.execPath(), {
  args: ["fmt", "--quiet", REGISTRY, FIXTURES],
  cwd: root,
}).output();
