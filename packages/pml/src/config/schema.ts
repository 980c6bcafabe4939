import { z } from "zod";
import { MAX_PRIVATE_MCPS } from "./defaults.ts";

/**
 * The schemas of `.pml.json`, built on first use: a `pml stdio` start in a workspace without
 * `.pml.json` parses none, and building them took ~3.3 ms of it after the SDK's `Server` had loaded
 * (docs/speed.md, "Cold start").
 */
function buildSchemas() {
  const toolPattern = z.string().regex(
    /^(\*|[A-Za-z0-9_.-]+(:(\*|[A-Za-z0-9_.-]+))?)$/,
    'a tool pattern: "*", "ns", "ns:*" or "ns:action"',
  );

  /** A network grant: a host or `host:port`, as `--allow-net` takes it (no scheme, no path). */
  const netHost = z.string().regex(
    /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)(:[0-9]{1,5})?$/,
    'a host or host:port, such as "api.example.com" or "127.0.0.1:8080"',
  );

  /** Permissions block of `.pml.json`: lists of tool patterns. */
  const PermissionsSchema = z.object({
    allow: z.array(toolPattern).default([]),
    ask: z.array(toolPattern).default([]),
    deny: z.array(toolPattern).default([]),
  }).strict();

  /** A local MCP definition (`private_mcps` entry): same shape as registry metadata. */
  const PrivateMcpSchema = z.object({
    type: z.enum(["deno", "stdio", "http"]),
    description: z.string().optional(),
    /** deno: path of a module file (relative to the workspace) or inline code. */
    module: z.string().optional(),
    code: z.string().optional(),
    /** stdio: how to start the server. */
    install: z.object({
      command: z.string(),
      args: z.array(z.string()).default([]),
      envRequired: z.array(z.string()).default([]),
    }).optional(),
    /** npm package; without `integrity` it runs with a warning (development, story 14.4 task 5). */
    package: z.object({ name: z.string(), version: z.string(), integrity: z.string().optional() })
      .optional(),
    permissions: z.object({
      read: z.array(z.string()).default([]),
      write: z.array(z.string()).default([]),
      net: z.array(netHost).default([]),
      env: z.array(z.string()).default([]),
    }).partial().optional(),
    /** http: the remote server, how to speak to it, and headers (`{NAME}` = a variable's value). */
    proxyTo: z.string().optional(),
    transport: z.enum(["streamable-http", "sse"]).optional(),
    headers: z.record(z.string(), z.string()).optional(),
    envRequired: z.array(z.string()).optional(),
    /**
     * http: how PML signs in with OAuth (docs/import.md): a pre-registered client (`{VAR}`
     * templates, the variables in `envRequired`), a client ID metadata document, a scope.
     */
    oauth: z.object({
      clientId: z.string().optional(),
      clientSecret: z.string().optional(),
      clientMetadataUrl: z.string().optional(),
      scope: z.string().optional(),
      redirectUri: z.string().optional(),
    }).strict().optional(),
    tools: z.array(z.unknown()).optional(),
    tools_used: z.array(z.string()).optional(),
  }).passthrough();

  /** The `.pml.json` file (DESIGN §4). Unknown top-level keys are refused to catch typos. */
  const PmlFileSchema = z.object({
    $schema: z.string().optional(),
    version: z.number().int().optional(),
    workspace: z.string().optional(),
    cloudUrl: z.url({ message: "an http(s) URL" }).optional(),
    port: z.number().int().min(1).max(65535).optional(),
    /** Who answers approvals the client cannot elicit: see docs/approvals.md. */
    approvals: z.enum(["agent", "human"]).optional(),
    /** `desktop`: also tell the human of a waiting approval with `notify-send` (default `off`). */
    notify: z.enum(["desktop", "off"]).optional(),
    permissions: PermissionsSchema.optional(),
    private_mcps: z.record(z.string(), PrivateMcpSchema).refine(
      (r) => Object.keys(r).length <= MAX_PRIVATE_MCPS,
      `at most ${MAX_PRIVATE_MCPS} servers per .pml.json`,
    ).optional(),
    registries: z.array(z.url({ message: "an http(s) URL" })).optional(),
    env: z.array(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "an environment variable name"))
      .optional(),
    /** `.pml/mcp.lock` clean-up: days without a use after which a pin is dropped (0: never). */
    lockfile: z.object({ maxAgeDays: z.number().int().min(0) }).partial().strict().optional(),
    sandbox: z.object({
      read: z.array(z.string()).default([]),
      write: z.array(z.string()).default([]),
      net: z.array(netHost).default([]),
      /** Paths hidden from every sandbox, besides the built-in secrets (docs/security.md). */
      deny: z.array(z.string()).default([]),
      /** Let `shell:exec` use the SSH agent (`SSH_AUTH_SOCK`): git over ssh. Off by default. */
      sshAgent: z.boolean().default(false),
      unconfined: z.boolean().default(false),
    }).partial().strict().optional(),
  }).strict();
  return { PermissionsSchema, PrivateMcpSchema, PmlFileSchema };
}

let schemas: ReturnType<typeof buildSchemas> | undefined;

/** The schemas of `.pml.json` (built once, on the first call). */
export function pmlSchemas(): ReturnType<typeof buildSchemas> {
  return schemas ??= buildSchemas();
}

type Schemas = ReturnType<typeof buildSchemas>;
export type PmlFile = z.infer<Schemas["PmlFileSchema"]>;
export type PermissionsFile = z.infer<Schemas["PermissionsSchema"]>;
export type PrivateMcp = z.infer<Schemas["PrivateMcpSchema"]>;
