/**
 * The cloud's tool list as the `CloudTarget` uses it: fetched, cached between runs, used
 * while fresh, refreshed in the background when stale, waited for within a bound, and not asked
 * again for a while after a failure (whose reason calls report).
 *
 * @module
 */
import { errorMessage, isPmlError, PmlError } from "../../errors.ts";
import { isToolId } from "../../gateway/names.ts";
import type { Tool } from "../../sdk/types.ts";
import type { ToolInfo } from "../target.ts";
import { declaredVariables } from "./byok.ts";
import type { CloudClient } from "./cloud_client.ts";
import { type CloudToolsCache, NO_TOOLS_CACHE } from "./tools_cache.ts";
import { LIST_BOUND_MS } from "../list_bound.ts";

/** A tool the cloud lists, keyed by tool id. */
export interface CloudTool {
  readonly info: ToolInfo;
  /** The name to send in `tools/call`. */
  readonly name: string;
  /** Variables its metadata declares, when it says. */
  readonly env?: readonly string[];
  /**
   * A tool of a registry http MCP (`_meta["pml/kind"]: "http"`): its server's resources, prompts
   * and completions are asked of the cloud too (`cloud_upstreams.ts`).
   */
  readonly http?: boolean;
}

/** What {@link CloudToolList} needs (a part of `CloudTargetDeps`). */
export interface CloudToolListDeps {
  readonly cloudUrl: string;
  readonly client: CloudClient;
  readonly listTimeoutMs?: number;
  readonly toolsTtlMs?: number;
  readonly retryMs?: number;
  readonly cache?: CloudToolsCache;
  readonly now?: () => number;
}

/** See the module documentation. */
export class CloudToolList {
  readonly #d: CloudToolListDeps;
  #tools?: Map<string, CloudTool>;
  #toolsAt = 0;
  #loading?: Promise<void>;
  /** The load a bounded wait already gave up on: later lists do not wait for it again. */
  #gaveUp?: Promise<void>;
  /** When the last load failed (the cloud is not asked again for `retryMs`), and why. */
  #failedAt?: number;
  #failure?: PmlError;

  constructor(deps: CloudToolListDeps) {
    this.#d = deps;
    const cached = (deps.cache ?? NO_TOOLS_CACHE).read();
    if (cached) this.#setTools(cached.tools, cached.fetchedAt);
  }

  /** The tools, by tool id, when a list is there (fresh or not). */
  get tools(): ReadonlyMap<string, CloudTool> | undefined {
    return this.#tools;
  }

  /** Why the last load failed (`CLOUD_UNREACHABLE` when it said nothing better). */
  get failure(): PmlError {
    return this.#failure ?? unreachable(this.#d.cloudUrl);
  }

  /** When the list was fetched ({@link CloudToolListDeps.now}'s clock). */
  get fetchedAt(): number {
    return this.#toolsAt;
  }

  /**
   * Makes sure a tool list is there or on its way: a fresh one is used as is; a stale one (older
   * than the TTL, or from the cache of an earlier run) is used while a refresh runs in the
   * background; with none, waits for the cloud at most `listTimeoutMs`, once per load (a later
   * list does not wait again for a load that already kept one waiting), and not at all within
   * `retryMs` of a failed load.
   */
  async ensure(): Promise<void> {
    const now = this.now();
    if (this.fresh(now)) return;
    if (!this.backingOff(now)) void this.refresh();
    const loading = this.#loading;
    if (this.#tools || !loading || loading === this.#gaveUp) return;
    if (!(await this.bounded(loading))) this.#gaveUp = loading;
  }

  /** A tool list is there and younger than the TTL. */
  fresh(now: number): boolean {
    return this.#tools !== undefined && now - this.#toolsAt <= (this.#d.toolsTtlMs ?? 5 * 60_000);
  }

  now(): number {
    return (this.#d.now ?? Date.now)();
  }

  /** The last load failed less than `retryMs` ago. */
  backingOff(now: number): boolean {
    return this.#failedAt !== undefined && now - this.#failedAt < (this.#d.retryMs ?? 30_000);
  }

  /** Loads the list now (one load at a time); a failure keeps the last list. */
  refresh(): Promise<void> {
    this.#loading ??= (async () => {
      try {
        const tools = await this.#d.client.listTools();
        const at = this.now();
        this.#setTools(tools, at);
        this.#failedAt = undefined;
        this.#failure = undefined;
        await (this.#d.cache ?? NO_TOOLS_CACHE).write({ tools, fetchedAt: at });
      } catch (err) {
        // Offline: keep the last list; calls report the failure.
        this.#failedAt = this.now();
        this.#failure = isPmlError(err) ? err : unreachable(this.#d.cloudUrl, err);
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  /** Waits for `p` at most `listTimeoutMs`; true when it settled in time. */
  async bounded(p: Promise<unknown>): Promise<boolean> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), this.#d.listTimeoutMs ?? LIST_BOUND_MS);
    });
    try {
      return await Promise.race([p.then(() => true, () => true), limit]);
    } finally {
      clearTimeout(timer);
    }
  }

  #setTools(tools: readonly Tool[], at: number): void {
    this.#tools = new Map(
      tools.map(toCloudTool).filter((t) => t !== undefined).map((t) => [t.info.id, t]),
    );
    this.#toolsAt = at;
  }
}

/** The failure of a cloud that did not list its tools. */
export function unreachable(cloudUrl: string, cause?: unknown): PmlError {
  return new PmlError(
    "CLOUD_UNREACHABLE",
    `the PML cloud at "${cloudUrl}/mcp" did not list its tools${
      cause ? ` (${errorMessage(cause)})` : ""
    }. Local tools keep working; cloud tools work again once it is back.`,
    { cause },
  );
}

/** Maps a tool of the cloud's `tools/list` to a tool id (`ns:action`, or `ns__action` exposed). */
function toCloudTool(tool: Tool): CloudTool | undefined {
  const meta = tool._meta?.["pml/toolId"];
  const candidates = [
    typeof meta === "string" ? meta : "",
    tool.name,
    tool.title ?? "",
    tool.name.replace("__", ":"),
  ];
  const id = candidates.find(isToolId);
  if (!id) return undefined;
  return {
    name: tool.name,
    env: declaredVariables(tool._meta),
    ...(tool._meta?.["pml/kind"] === "http" ? { http: true } : {}),
    info: {
      id,
      description: tool.description ?? "",
      inputSchema: tool.inputSchema as Record<string, unknown>,
      routing: "server",
      ...hintsOf(tool.annotations),
    },
  };
}

const HINTS = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const;

/**
 * The behaviour hints the PML cloud states for a tool it lists (it states them for the tools it
 * computes itself: `json`, `math`, `text`, `pml:search`), booleans only: clients such as Codex let
 * a read-only tool through without their own approval. PML's permissions still decide every call.
 */
function hintsOf(annotations: Tool["annotations"]): Pick<ToolInfo, "annotations"> {
  const hints: Record<string, boolean> = {};
  for (const hint of HINTS) {
    const value = annotations?.[hint];
    if (typeof value === "boolean") hints[hint] = value;
  }
  return Object.keys(hints).length ? { annotations: hints } : {};
}
