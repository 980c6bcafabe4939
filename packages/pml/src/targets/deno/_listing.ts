/**
 * `tools/list` entries of registry deno modules: the tools the permissions name (exact ids and
 * namespaces in `allow`/`ask`) found in the catalog, the private deno MCPs, and, when the
 * registries are unreachable, the locked entries. Descriptions and schemas come from the literal
 * `__meta__` of a cached or private module when there is one.
 */
import type { Permissions } from "../../permission/patterns.ts";
import { integrityToHex } from "../../registry/integrity.ts";
import { type ModuleScan, scanModule } from "../../registry/module_scan.ts";
import type { CatalogItem } from "../../registry/registry_client.ts";
import type { RoutingResolver } from "../../routing/routing.ts";
import type { ToolInfo } from "../target.ts";
import type { RegistryStack } from "./_stack.ts";
import { BoundedLoad } from "../list_bound.ts";

/** Per registry stack: the catalogue look-ups of `tools/list`, waited for at most once. */
const catalogueLoads = new WeakMap<RegistryStack, BoundedLoad>();

const ANY_OBJECT = { type: "object", additionalProperties: true };

/** Lists the tools (see the module documentation). */
export async function listRegistryTools(
  stack: RegistryStack,
  deps: { permissions: () => Permissions; routing: RoutingResolver },
  namespaces?: ReadonlySet<string>,
): Promise<ToolInfo[]> {
  const out = new Map<string, ToolInfo>();
  const wanted = (ns: string) => !namespaces || namespaces.has(ns);
  for (const ns of stack.privateMcps.denoNamespaces()) {
    if (!wanted(ns)) continue;
    try {
      const src = await stack.privateMcps.denoSource(ns);
      const scan = await scanModule(src!.code);
      for (const action of scan.exports) {
        if (action.startsWith("_")) continue;
        add(out, `${ns}:${action}`, scan, `Private MCP ${ns}:${action}`, deps.routing);
      }
    } catch { /* a broken private module is reported when called */ }
  }
  const perms = deps.permissions();
  const patterns = [...perms.allow, ...perms.ask].filter((p) =>
    p !== "*" && wanted(p.split(":")[0])
  );
  const lock = await stack.lockfile().catch(() => undefined);
  const privates = new Set(stack.privateMcps.denoNamespaces());
  let items: CatalogItem[] = [];
  try {
    // Bounded like the cloud's list (2 s): a silent registry must not hold `tools/list`.
    let loads = catalogueLoads.get(stack);
    if (!loads) catalogueLoads.set(stack, loads = new BoundedLoad());
    items = await loads.run(async () => {
      const found: CatalogItem[] = [];
      for (const p of patterns) {
        const [ns, action] = p.split(":");
        if (privates.has(ns)) continue;
        if (action && action !== "*") {
          const item = await stack.client.findTool(p);
          if (item) found.push(item);
        } else {
          found.push(...await stack.client.findNamespace(ns));
        }
      }
      return found;
    });
  } catch {
    items = []; // registries unreachable or slow: the locked entries below still list
  }
  for (const [name, e] of lock?.entries() ?? []) {
    const [, , ns, action] = name.split(".");
    if (e.type === "deno" && wanted(ns) && !privates.has(ns)) {
      items.push({
        registry: "",
        fqdn: e.fqdn,
        type: "deno",
        routing: e.routing,
        description: "",
        tools: [`${ns}:${action}`],
      });
    }
  }
  for (const item of items) {
    const scan = await cachedScan(
      stack,
      lock?.get(item.fqdn.split(".").slice(0, 4).join("."))?.integrity,
    );
    for (const id of item.tools) {
      // Platform server tools (json, math, …) are served, and listed, by the cloud target.
      if (deps.routing.routeOf(id) === "server") continue;
      add(out, id, scan, item.description || `Registry module ${item.fqdn}`, deps.routing);
    }
  }
  return [...out.values()];
}

function add(
  out: Map<string, ToolInfo>,
  id: string,
  scan: ModuleScan | undefined,
  fallback: string,
  routing: RoutingResolver,
) {
  if (out.has(id)) return;
  const action = id.slice(id.indexOf(":") + 1);
  const meta = scan?.meta as {
    description?: unknown;
    inputSchema?: unknown;
    tools?: Record<string, { description?: unknown; inputSchema?: unknown }>;
  } | undefined;
  const tool = meta?.tools?.[action] ?? meta;
  out.set(id, {
    id,
    description: typeof tool?.description === "string" ? tool.description : fallback,
    inputSchema: tool?.inputSchema && typeof tool.inputSchema === "object"
      ? tool.inputSchema as Record<string, unknown>
      : ANY_OBJECT,
    routing: routing.routeOf(id),
  });
}

async function cachedScan(
  stack: RegistryStack,
  integrity: string | undefined,
): Promise<ModuleScan | undefined> {
  const hex = integrity && integrityToHex(integrity);
  if (!hex) return undefined;
  try {
    const bytes = await stack.cache.get(hex);
    return bytes ? await scanModule(new TextDecoder().decode(bytes)) : undefined;
  } catch {
    return undefined;
  }
}
