import { z } from "zod";
import { PmlError } from "../errors.ts";

/**
 * The stdio metadata a registry serves (DESIGN §7), as it arrives on the wire or in `private_mcps`.
 * Built on its first use: a `pml stdio` start in a workspace without stdio servers parses none,
 * and its ~20 zod schemas took ~2 ms of each start (docs/speed.md, "Cold start").
 */
function buildStdioMetadataSchema() {
  const names = z.array(z.string()).default([]);
  return z.object({
    fqdn: z.string().optional(),
    type: z.literal("stdio"),
    description: z.string().default(""),
    routing: z.string().optional(),
    install: z.object({
      command: z.string().min(1),
      args: names,
      envRequired: names,
    }),
    package: z.object({
      name: z.string().min(1),
      version: z.string().min(1),
      /** Required, except in `private_mcps` (story 14.4 task 5: "warn but allow for dev"). */
      integrity: z.string().regex(/^sha512-[A-Za-z0-9+/]+=*$/, 'an SRI hash "sha512-…"').optional(),
    }).optional(),
    permissions: z.object({ read: names, write: names, net: names, env: names }).partial().default(
      {},
    ),
    tools: z.array(
      z.union([
        z.string(),
        z.object({
          name: z.string(),
          description: z.string().optional(),
          inputSchema: z.record(z.string(), z.unknown()).optional(),
        }).passthrough(),
      ]),
    ).default([]),
    warnings: z.unknown().optional(),
    /** Tools the model may use when this MCP asks for sampling (permission patterns). */
    allowedToolPatterns: names,
  }).passthrough();
}

let stdioMetadataSchema: ReturnType<typeof buildStdioMetadataSchema> | undefined;

/** One tool of a dependency, by action (the name the server itself knows). */
export interface DependencyTool {
  readonly action: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
}

/**
 * A pinned npm package, with the SRI integrity its tarball must have. Only a `private_mcps` entry
 * may leave `integrity` out (development): npm's own check of the tarball against the registry's
 * package document is then the only one, and `pml status` and every question say so.
 */
export interface PinnedPackage {
  readonly name: string;
  readonly version: string;
  readonly integrity?: string;
}

/** The loud warning for a package without `integrity` (status, questions, install progress). */
export function unpinnedWarning(server: string, pkg: PinnedPackage): string {
  return `WARNING: ${server} installs ${pkg.name}@${pkg.version} with NO pinned integrity ` +
    `(private_mcps.${server}.package has no "integrity": allowed for development only); ` +
    `whatever tarball npm serves for that version runs. Add its "sha512-…" integrity ` +
    `(npm view ${pkg.name}@${pkg.version} dist.integrity) to pin it`;
}

/**
 * A stdio MCP server as PML runs it: the metadata, normalised. `server` is the namespace of its tools
 * (`memory` → `memory:create_entities`).
 */
export interface DependencyMeta {
  readonly server: string;
  readonly fqdn: string;
  readonly description: string;
  /** The declared command (`npx`, `uvx`, …) and its arguments; may hold `${workspace}`. */
  readonly command: string;
  readonly args: readonly string[];
  readonly envRequired: readonly string[];
  /** Present for npm servers: installed with npm and run under Deno. */
  readonly package?: PinnedPackage;
  /** What the process may touch; paths may hold `${workspace}` and `${packageDir}`. */
  readonly permissions: {
    readonly read: readonly string[];
    readonly write: readonly string[];
    readonly net: readonly string[];
    readonly env: readonly string[];
  };
  readonly tools: readonly DependencyTool[];
  /** Gateway tools offered to the model when this MCP asks for sampling (permission patterns). */
  readonly allowedToolPatterns: readonly string[];
  readonly warnings?: unknown;
  /** Where the metadata came from: `private_mcps`, the built-in catalogue, a registry URL. */
  readonly source: string;
}

/**
 * Where stdio metadata comes from. Implementations: {@link PrivateMcpSource} (`.pml.json`),
 * `CatalogueSource` (the repository's `registry/mcp/`), and a registry client.
 */
export interface MetadataSource {
  /** Short names of the stdio servers this source knows. */
  list(): Promise<string[]>;
  /** The metadata of `server`, or `undefined` when this source does not know it. */
  get(server: string): Promise<DependencyMeta | undefined>;
  /**
   * What `get` would answer now, without waiting: the metadata, or `null` when this source does
   * not know `server`; `undefined` when that needs a look-up (not loaded yet, expired, a failure
   * to report). The tool-call path of a warm server takes it; absent, `get` is asked.
   */
  peek?(server: string): DependencyMeta | null | undefined;
}

const EMPTY_SCHEMA = { type: "object", properties: {} };

/**
 * Validates raw stdio metadata and normalises it. Tool names may be `action` or `ns:action`
 * (the namespace is replaced by `server`).
 *
 * @example
 * ```ts
 * const meta = parseStdioMetadata("memory", json, "registry/mcp/memory.json");
 * meta.tools[0].action; // "create_entities"
 * ```
 */
export function parseStdioMetadata(server: string, raw: unknown, source: string): DependencyMeta {
  const parsed = (stdioMetadataSchema ??= buildStdioMetadataSchema()).safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new PmlError(
      "METADATA_INVALID",
      `Invalid metadata for "${server}" (${source}): field "${
        issue.path.join(".") || "(top level)"
      }": ${issue.message}`,
    );
  }
  const m = parsed.data;
  if (m.package && m.package.integrity === undefined && !source.startsWith(".pml.json")) {
    throw new PmlError(
      "METADATA_INVALID",
      `Invalid metadata for "${server}" (${source}): field "package.integrity": required (only ` +
        `a .pml.json private_mcps entry may leave it out, for development)`,
    );
  }
  const tools = m.tools.map((t): DependencyTool => {
    const name = typeof t === "string" ? t : t.name;
    const action = name.slice(name.indexOf(":") + 1); // "ns:action" (any ns: entries may be renamed)
    return {
      action,
      description: typeof t === "string" ? "" : t.description ?? "",
      inputSchema: typeof t === "string" ? EMPTY_SCHEMA : t.inputSchema ?? EMPTY_SCHEMA,
    };
  });
  return {
    server,
    fqdn: m.fqdn ?? `pml.mcp.${server}.server`,
    description: m.description,
    command: m.install.command,
    args: m.install.args,
    envRequired: m.install.envRequired,
    package: m.package,
    permissions: {
      read: m.permissions.read ?? [],
      write: m.permissions.write ?? [],
      net: m.permissions.net ?? [],
      env: m.permissions.env ?? [],
    },
    tools,
    allowedToolPatterns: m.allowedToolPatterns,
    warnings: m.warnings,
    source,
  };
}
