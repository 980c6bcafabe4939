/**
 * `pml:search`: ranked search over every tool of the registry (std modules, stdio and http MCP
 * servers, published capabilities) by intent. BM25 over each tool's id (split on `:_-` and
 * camelCase, weighted highest), its description, and its namespace's description (lowest). The
 * index is built once per catalog snapshot, so it follows registry changes.
 *
 * @module
 */
import { Bm25Index } from "./bm25.ts";
import type { CatalogSnapshot, CatalogTool } from "./tool_catalog.ts";

/** The tool id and its input schema. */
export const SEARCH_TOOL: {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly inputSchema: { type: "object"; [key: string]: unknown };
} = {
  id: "pml:search",
  name: "pml__search",
  description:
    'Search the PML registry for tools and learned capabilities by intent (e.g. "read a file", ' +
    '"search the web"). Returns tool ids, descriptions, input schemas and where each runs ' +
    "(routing: client = the user's machine through the pml package, server = the PML server).",
  inputSchema: {
    type: "object",
    properties: {
      query: { type: "string", minLength: 1, description: "What you want to do, in words" },
      limit: { type: "integer", minimum: 1, maximum: 50, default: 8 },
      routing: { type: "string", enum: ["client", "server"], description: "Only this routing" },
    },
    required: ["query"],
  },
};

/** Field weights: the id says most about a tool, the namespace's description least. */
const WEIGHTS = { id: 3, description: 1, namespace: 0.5 };

/** One search result. */
export interface SearchResult {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly routing: CatalogTool["routing"];
  readonly kind: CatalogTool["kind"];
  readonly fqdn: string;
  readonly envRequired: readonly string[];
  readonly score: number;
}

/** Search arguments (validated by {@link parseSearchArgs}). */
export interface SearchArgs {
  readonly query: string;
  readonly limit: number;
  readonly routing?: "client" | "server";
}

const indexes = new WeakMap<CatalogSnapshot, Bm25Index>();

function indexOf(snapshot: CatalogSnapshot): Bm25Index {
  let index = indexes.get(snapshot);
  if (!index) {
    index = new Bm25Index(snapshot.tools.map((tool, position) => ({
      id: String(position),
      fields: [
        { text: tool.id, weight: WEIGHTS.id },
        { text: tool.description, weight: WEIGHTS.description },
        { text: tool.namespaceDescription, weight: WEIGHTS.namespace },
      ],
    })));
    indexes.set(snapshot, index);
  }
  return index;
}

/**
 * Validates the arguments of a `pml:search` call.
 *
 * @throws {TypeError} naming the bad argument.
 */
export function parseSearchArgs(args: Record<string, unknown>): SearchArgs {
  const { query, limit = 8, routing } = args;
  if (typeof query !== "string" || query.trim() === "") {
    throw new TypeError(`Argument "query" must be a non-empty string`);
  }
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > 50) {
    throw new TypeError(`Argument "limit" must be an integer from 1 to 50, got ${String(limit)}`);
  }
  if (routing !== undefined && routing !== "client" && routing !== "server") {
    throw new TypeError(`Argument "routing" must be "client" or "server", got ${String(routing)}`);
  }
  return { query: query.slice(0, 2000), limit, routing };
}

/** Which entry represents a tool id that several entries provide (std module over stdio server). */
const KIND_RANK: Record<CatalogTool["kind"], number> = { std: 0, http: 1, stdio: 2, capability: 3 };

/** The best `args.limit` tools of the snapshot for `args.query`, one result per tool id. */
export function searchTools(snapshot: CatalogSnapshot, args: SearchArgs): SearchResult[] {
  const hits = indexOf(snapshot).search(args.query, snapshot.tools.length);
  const best = new Map<string, { tool: CatalogTool; score: number }>();
  for (const hit of hits) {
    const tool = snapshot.tools[Number(hit.id)];
    if (args.routing && tool.routing !== args.routing) continue;
    const known = best.get(tool.id);
    if (!known) best.set(tool.id, { tool, score: hit.score });
    else if (KIND_RANK[tool.kind] < KIND_RANK[known.tool.kind]) known.tool = tool;
  }
  return [...best.values()].slice(0, args.limit).map(({ tool, score }) => ({
    id: tool.id,
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema,
    routing: tool.routing,
    kind: tool.kind,
    fqdn: tool.fqdn,
    envRequired: tool.envRequired,
    score: Math.round(score * 1000) / 1000,
  }));
}
