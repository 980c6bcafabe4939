/**
 * Server metadata files (`registry/mcp/<server>.json`): stdio MCP servers (installed and run on
 * the user's machine) and HTTP MCP servers (proxied by the server). Each becomes the entry
 * `pml.mcp.<server>.server`, serving the metadata as JSON.
 *
 * The served JSON cannot contain its own hash, so its `fqdn` field holds the 4-part name; the
 * 5-part FQDN is `<name>.<first 4 hex of the SHA-256 of the served bytes>` like every entry.
 *
 * @module
 */
import { basename } from "node:path";
import { z } from "zod";
import type { RegistryEntry } from "../store/store.ts";
import { FQDN_PART } from "./fqdn.ts";
import { sha256Hex, sha256Integrity } from "./hash.ts";

const ToolSchema = z.looseObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]*:[A-Za-z0-9][A-Za-z0-9_-]*$/),
  description: z.string(),
  inputSchema: z.record(z.string(), z.unknown()),
});

const StdioSchema = z.strictObject({
  type: z.literal("stdio"),
  description: z.string(),
  install: z.strictObject({
    command: z.string().min(1),
    args: z.array(z.string()),
    envRequired: z.array(z.string()),
  }),
  package: z.strictObject({
    name: z.string(),
    version: z.string(),
    integrity: z.string().regex(/^sha512-[A-Za-z0-9+/]{86}==$/),
  }),
  permissions: z.strictObject({
    read: z.array(z.string()),
    write: z.array(z.string()),
    net: z.array(z.string()),
    env: z.array(z.string()),
  }),
  tools: z.array(ToolSchema),
  warnings: z.record(z.string(), z.unknown()),
});

/** Where the server puts a BYOK key when it proxies a call (`format` holds `{key}`). */
const ByokSchema = z.strictObject({
  env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
  header: z.string().regex(/^[A-Za-z0-9-]+$/),
  format: z.string().includes("{key}").default("{key}"),
});

const HttpSchema = z.strictObject({
  type: z.literal("http"),
  description: z.string(),
  proxyTo: z.url({ protocol: /^https?$/ }),
  envRequired: z.array(z.string()),
  byok: ByokSchema.optional(),
  tools: z.array(ToolSchema),
}).refine((meta) => !meta.byok || meta.envRequired.includes(meta.byok.env), {
  message: "byok.env must be listed in envRequired",
});

const MetadataSchema = z.discriminatedUnion("type", [StdioSchema, HttpSchema]);

/** The content of a `registry/mcp/<server>.json` file. */
export type McpMetadataFile = z.infer<typeof MetadataSchema>;

/**
 * Builds the entry of one metadata file.
 *
 * @throws {TypeError} when the file is not valid JSON of the stdio or http shape, or a tool id
 * does not start with `<server>:`.
 */
export async function mcpMetadataEntry(path: string, updatedAt: string): Promise<RegistryEntry> {
  const server = basename(path, ".json");
  if (!FQDN_PART.test(server)) {
    throw new TypeError(`Invalid server name "${server}" (file "${path}")`);
  }
  let json: unknown;
  try {
    json = JSON.parse(await Deno.readTextFile(path));
  } catch (error) {
    throw new TypeError(`Cannot read MCP metadata "${path}": ${(error as Error).message}`);
  }
  const parsed = MetadataSchema.safeParse(json);
  if (!parsed.success) {
    throw new TypeError(`Invalid MCP metadata "${path}": ${z.prettifyError(parsed.error)}`);
  }
  const meta = parsed.data;
  const foreign = meta.tools.find((tool) => !tool.name.startsWith(`${server}:`));
  if (foreign) {
    throw new TypeError(`Tool "${foreign.name}" in "${path}" must be named "${server}:<action>"`);
  }
  const name = `pml.mcp.${server}.server`;
  const { type, description, ...rest } = meta;
  const head = { fqdn: name, type, description, routing: type === "stdio" ? "client" : "server" };
  const served = meta.type === "stdio" ? { ...head, ...rest } : {
    ...head,
    ...rest,
    integrity: sha256Integrity(
      JSON.stringify({
        proxyTo: meta.proxyTo,
        envRequired: meta.envRequired,
        ...(meta.byok ? { byok: meta.byok } : {}),
        tools: meta.tools,
      }),
    ),
  };
  const body = new TextEncoder().encode(JSON.stringify(served, null, 2) + "\n");
  return {
    name,
    hash: sha256Hex(body),
    type: meta.type,
    routing: meta.type === "stdio" ? "client" : "server",
    origin: "seed",
    description: meta.description,
    tools: meta.tools.map((tool) => tool.name),
    publishedBy: null,
    body,
    updatedAt,
  };
}
