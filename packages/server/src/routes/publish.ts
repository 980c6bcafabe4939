/**
 * Publishing a learned capability (`POST /mcp` with a JSON body that is not JSON-RPC):
 * `{org, project, namespace, action, code, description?, tools_used?}` → 201 `{"fqdn"}`.
 * A new version of the code gets a new hash; old FQDNs then answer `hash_mismatch`.
 *
 * @module
 */
import { z } from "zod";
import { HttpError, jsonResponse } from "../http.ts";
import { checkCapabilityCode } from "../registry/capability_code.ts";
import { FQDN_PART, fqdnWithHash } from "../registry/fqdn.ts";
import { sha256Hex } from "../registry/hash.ts";
import { routeTools, type RoutingTable } from "../registry/routing_table.ts";
import type { ApiKeyRecord, RegistryEntry, Store } from "../store/store.ts";

/** org.project pairs that only the seed may write. */
const RESERVED = new Set(["pml.std", "pml.mcp"]);

const part = z.string().regex(
  FQDN_PART,
  "must be 1-64 characters of A-Z a-z 0-9 _ - starting with a letter or digit",
);

const PublishSchema = z.strictObject({
  org: part,
  project: part,
  namespace: part,
  action: part,
  code: z.string().min(1, "must not be empty"),
  description: z.string().max(2000).optional(),
  tools_used: z.array(
    z.string().regex(
      /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}:[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/,
      "must be a tool id namespace:action",
    ),
  )
    .max(200).optional(),
});

/** What publishing needs from the app. */
export interface PublishDeps {
  readonly store: Store;
  readonly routing: RoutingTable;
  readonly now: () => number;
  /** Called after a successful write (the app clears its registry cache). */
  readonly onWrite: () => void;
}

/** Validates and stores the capability described by the parsed JSON `body`. */
export async function publishCapability(
  body: unknown,
  key: ApiKeyRecord,
  deps: PublishDeps,
): Promise<Response> {
  const parsed = PublishSchema.safeParse(body);
  if (!parsed.success) {
    throw new HttpError(
      400,
      "invalid_request",
      `Invalid publish request: ${z.prettifyError(parsed.error)}`,
    );
  }
  const input = parsed.data;
  const name = `${input.org}.${input.project}.${input.namespace}.${input.action}`;
  if (RESERVED.has(`${input.org}.${input.project}`)) {
    throw new HttpError(
      409,
      "reserved_name",
      `Cannot publish "${name}": "${input.org}.${input.project}" is reserved for the seeded registry`,
    );
  }
  try {
    checkCapabilityCode(input.code, input.action);
  } catch (error) {
    throw new HttpError(400, "invalid_code", (error as Error).message);
  }
  const bytes = new TextEncoder().encode(input.code);
  const hash = sha256Hex(bytes);
  const entry: RegistryEntry = {
    name,
    hash,
    type: "deno",
    // Undeclared tools could be anything: run it on the user's machine, the safe side.
    routing: input.tools_used ? routeTools(deps.routing, input.tools_used) : "client",
    origin: "publish",
    description: input.description ?? `Learned capability ${input.namespace}:${input.action}`,
    tools: [`${input.namespace}:${input.action}`],
    publishedBy: key.id,
    body: bytes,
    updatedAt: new Date(deps.now()).toISOString(),
  };
  if (await deps.store.putEntry(entry)) deps.onWrite();
  const fqdn = fqdnWithHash(name, hash);
  return jsonResponse(201, { fqdn }, { location: `/mcp/${fqdn}` });
}
