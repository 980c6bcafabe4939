/**
 * Std modules (`registry/std/<namespace>.ts`): one registry entry `pml.std.<ns>.<action>` per
 * action listed in the module's `__meta__`, serving the module file's exact bytes.
 *
 * The module is imported to read `__meta__` and check that every listed action is an exported
 * function. These are repository files, trusted like the server's own code.
 *
 * @module
 */
import { basename, join } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import type { RegistryEntry } from "../store/store.ts";
import { FQDN_PART } from "./fqdn.ts";
import { sha256Hex } from "./hash.ts";
import { routeNamespace, type RoutingTable } from "./routing_table.ts";

const MetaSchema = z.object({
  namespace: z.string().regex(FQDN_PART),
  description: z.string(),
  tools: z.record(
    z.string().regex(FQDN_PART),
    z.looseObject({ description: z.string(), inputSchema: z.record(z.string(), z.unknown()) }),
  ),
});

/** Paths of the std modules in `dir` (`*.ts`, not `_`-prefixed helpers, not tests), sorted. */
export async function listStdModules(dir: string): Promise<string[]> {
  const paths: string[] = [];
  try {
    for await (const item of Deno.readDir(dir)) {
      const name = item.name;
      if (!item.isFile || !name.endsWith(".ts") || name.startsWith("_")) continue;
      if (name.endsWith("_test.ts") || name.endsWith(".d.ts")) continue;
      paths.push(join(dir, name));
    }
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  return paths.sort();
}

/**
 * Builds the entries of one std module.
 *
 * @throws {TypeError} when `__meta__` is missing or malformed, its namespace differs from the
 * file name, or a listed action is not an exported function.
 */
export async function stdModuleEntries(
  path: string,
  routing: RoutingTable,
  updatedAt: string,
): Promise<RegistryEntry[]> {
  const body = await Deno.readFile(path);
  const module = await import(pathToFileURL(path).href);
  const parsed = MetaSchema.safeParse(module.__meta__);
  if (!parsed.success) {
    throw new TypeError(
      `Invalid __meta__ in std module "${path}": ${z.prettifyError(parsed.error)}`,
    );
  }
  const meta = parsed.data;
  const stem = basename(path, ".ts");
  if (meta.namespace !== stem) {
    throw new TypeError(
      `Std module "${path}" declares namespace "${meta.namespace}" but its file is named "${stem}.ts"`,
    );
  }
  const hash = sha256Hex(body);
  return Object.entries(meta.tools).map(([action, tool]) => {
    if (typeof module[action] !== "function") {
      throw new TypeError(
        `Std module "${path}" lists action "${action}" in __meta__.tools but exports no function "${action}"`,
      );
    }
    return {
      name: `pml.std.${meta.namespace}.${action}`,
      hash,
      type: "deno",
      routing: routeNamespace(routing, meta.namespace),
      origin: "seed",
      description: tool.description,
      tools: [`${meta.namespace}:${action}`],
      publishedBy: null,
      body,
      updatedAt,
    } satisfies RegistryEntry;
  });
}
