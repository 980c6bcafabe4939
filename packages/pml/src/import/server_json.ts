/**
 * The MCP Registry's `server.json` (the format servers publish themselves in): its npm `packages`
 * (`registryType: "npm"`, `identifier`, `version`, `transport`, `runtimeArguments`,
 * `packageArguments`, `environmentVariables`) and its `remotes` (`streamable-http` or `sse`, with
 * `headers` and URL `variables`), read into {@link ClientEntry}s that `pml import` and
 * `pml-server publish` turn into PML's own definitions.
 *
 * @module
 */
import { z } from "zod";
import { PmlError } from "../errors.ts";
import type { ClientEntry } from "./client_entry.ts";

const Input = z.looseObject({
  name: z.string().optional(),
  value: z.string().optional(),
  default: z.string().optional(),
  valueHint: z.string().optional(),
  description: z.string().optional(),
  isRequired: z.boolean().optional(),
  isSecret: z.boolean().optional(),
});

const Argument = Input.extend({ type: z.enum(["positional", "named"]) });

const Transport = z.looseObject({
  type: z.enum(["stdio", "streamable-http", "sse"]),
  url: z.string().optional(),
  headers: z.array(Input).optional(),
});

const Package = z.looseObject({
  registryType: z.string(),
  identifier: z.string().min(1),
  version: z.string().optional(),
  runtimeHint: z.string().optional(),
  transport: Transport,
  runtimeArguments: z.array(Argument).optional(),
  packageArguments: z.array(Argument).optional(),
  environmentVariables: z.array(Input.extend({ name: z.string().min(1) })).optional(),
});

const Remote = Transport.extend({
  type: z.enum(["streamable-http", "sse"]),
  url: z.string().min(1),
  variables: z.record(z.string(), Input).optional(),
});

/** A `server.json` document (the fields PML reads; others are kept as they are). */
export const ServerJsonSchema = z.looseObject({
  $schema: z.string().optional(),
  name: z.string().regex(/^[^/]+\/[^/]+$/, 'a name "namespace/server"'),
  description: z.string().default(""),
  version: z.string().optional(),
  title: z.string().optional(),
  packages: z.array(Package).optional(),
  remotes: z.array(Remote).optional(),
});
export type ServerJson = z.infer<typeof ServerJsonSchema>;

/** True when `doc` looks like a `server.json` (has `packages` or `remotes` and a `name`). */
export function isServerJson(doc: unknown): boolean {
  const o = doc as Record<string, unknown> | undefined;
  return !!o && typeof o === "object" && typeof o.name === "string" &&
    (Array.isArray(o.packages) || Array.isArray(o.remotes));
}

/** Validates a `server.json` document; errors name the file and the field. */
export function parseServerJson(doc: unknown, file: string): ServerJson {
  const parsed = ServerJsonSchema.safeParse(doc);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new PmlError(
      "IMPORT_FAILED",
      `Invalid server.json ${file}: field "${
        issue.path.join(".") || "(top level)"
      }": ${issue.message}`,
    );
  }
  return parsed.data;
}

/** The short name of a server (`io.github.user/weather` → `weather`). */
export function serverJsonShortName(doc: ServerJson): string {
  return doc.name.slice(doc.name.indexOf("/") + 1);
}

/**
 * The entry PML imports from `doc`: its first npm package with the stdio transport, else its first
 * remote. Unresolved inputs (a positional argument with only a `valueHint`) are listed in
 * `missing`; nothing is invented for them.
 */
export function serverJsonEntry(
  doc: ServerJson,
  file: string,
): { entry: ClientEntry; missing: string[] } {
  const missing: string[] = [];
  const base = {
    name: serverJsonShortName(doc),
    file,
    client: "server.json",
    description: doc.description || doc.title,
    headers: {} as Record<string, string>,
    headerEnv: {},
  };
  const pkg = doc.packages?.find((p) => p.registryType === "npm" && p.transport.type === "stdio");
  if (pkg) {
    const spec = pkg.version ? `${pkg.identifier}@${pkg.version}` : pkg.identifier;
    const runtime = pkg.runtimeArguments?.length
      ? renderArgs(pkg.runtimeArguments, missing)
      : ["-y"];
    const env: Record<string, string> = {};
    const optionalEnv: string[] = [];
    for (const v of pkg.environmentVariables ?? []) {
      env[v.name] = `\${${v.name}}`;
      if (!v.isRequired) optionalEnv.push(v.name);
    }
    return {
      entry: {
        ...base,
        command: pkg.runtimeHint && pkg.runtimeHint !== "npx" ? pkg.runtimeHint : "npx",
        args: [...runtime, spec, ...renderArgs(pkg.packageArguments ?? [], missing)],
        env,
        optionalEnv,
      },
      missing,
    };
  }
  const remote = doc.remotes?.[0];
  if (remote) {
    let url = remote.url;
    for (const [name, v] of Object.entries(remote.variables ?? {})) {
      const value = v.value ?? v.default;
      if (value === undefined) missing.push(`URL variable {${name}}`);
      else url = url.replaceAll(`{${name}}`, value);
    }
    const headers: Record<string, string> = {};
    for (const h of remote.headers ?? []) {
      if (!h.name) continue;
      // A header without a fixed value comes from an environment variable named after it.
      headers[h.name] = h.value && !h.isSecret ? h.value : `\${${envName(h.name)}}`;
    }
    return {
      entry: { ...base, args: [], env: {}, url, transport: remote.type, headers },
      missing,
    };
  }
  const kinds = (doc.packages ?? []).map((p) => `${p.registryType}/${p.transport.type}`);
  throw new PmlError(
    "IMPORT_FAILED",
    `server.json ${file} ("${doc.name}") has no npm package with the stdio transport and no ` +
      `remote${
        kinds.length ? ` (packages: ${kinds.join(", ")})` : ""
      }; PML imports those two kinds`,
  );
}

/** An environment variable name for a header (`X-Api-Key` → `X_API_KEY`). */
export function envName(header: string): string {
  // A variable name never starts with a digit (`{NAME}` and the shell both need a letter or _).
  return header.toUpperCase().replace(/[^A-Z0-9]+/g, "_").replace(/^_+|_+$/g, "")
    .replace(/^(?=[0-9])/, "_");
}

function renderArgs(args: readonly z.infer<typeof Argument>[], missing: string[]): string[] {
  const out: string[] = [];
  for (const a of args) {
    const value = a.value ?? a.default;
    if (a.type === "named") {
      if (!a.name) continue;
      out.push(a.name);
      if (value !== undefined) out.push(value);
    } else if (value !== undefined) {
      out.push(value);
    } else {
      missing.push(`argument ${a.valueHint ?? a.name ?? "(positional)"}`);
    }
  }
  return out;
}
