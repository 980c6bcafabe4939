import type { UpstreamHub } from "../upstream/upstream_hub.ts";
import type { Config } from "../../config/config.ts";
import type { MetaTool } from "../../gateway/gateway.ts";
import {
  createRoutingResolver,
  type RoutingResolver,
  type RoutingTable,
} from "../../routing/routing.ts";
import { SyncedRouting } from "../../routing/routing_sync.ts";
import { CloudClient } from "./cloud_client.ts";
import { CloudTarget } from "./cloud_target.ts";
import type { HttpPins } from "./http_pins.ts";
import { cloudSearchTool } from "./search_tool.ts";
import { type CloudToolsCache, fileToolsCache } from "./tools_cache.ts";
import { LIST_BOUND_MS } from "../list_bound.ts";

/** Overrides for the cloud side of the gateway (tests, embedding). */
export interface CloudOptions {
  /** A fixed routing table: no sync. */
  readonly routingTable?: RoutingTable;
  readonly fetch?: typeof fetch;
  /**
   * Bound on reaching the cloud (connect, list, routing sync). Default: `PML_CLOUD_TIMEOUT_MS`
   * from the environment, else 10 s.
   */
  readonly timeoutMs?: number;
  /** Bound on one cloud tool call (default 60 s, reset by progress). */
  readonly callTimeoutMs?: number;
  /** Longest wait of `tools/list` for the cloud's tools (default 2 s). */
  readonly listTimeoutMs?: number;
  /** Where the cloud's last tool list is kept (default `~/.pml/cloud-tools.json`). */
  readonly toolsCache?: CloudToolsCache;
}

/** What the composition root wires: the routing resolver, the target (last) and meta tools. */
export interface Cloud {
  readonly routing: RoutingResolver;
  readonly target: CloudTarget;
  readonly metaTools: readonly MetaTool[];
}

/**
 * Builds the cloud side from the config. In cloud mode (an API key is set) it starts, in the
 * background, the routing sync and the first `tools/list` of the cloud; nothing waits for them.
 *
 * @example
 * ```ts
 * const cloud = createCloud(config);
 * new Gateway({ routing: cloud.routing, targets: [std, cloud.target], metaTools: cloud.metaTools, … });
 * ```
 */
export function createCloud(
  config: Config,
  opts: CloudOptions = {},
  /** The lockfile guard of http MCPs (absent: not pinned). */
  pins?: HttpPins,
  /** Where registry http MCPs' notifications outside a call go. */
  hub?: UpstreamHub,
): Cloud {
  const timeoutMs = opts.timeoutMs ?? (Number(config.env.PML_CLOUD_TIMEOUT_MS) || 10_000);
  const cloudMode = config.apiKey !== undefined;
  const stop = new AbortController();
  let routing: RoutingResolver;
  if (opts.routingTable) {
    routing = createRoutingResolver(opts.routingTable);
  } else {
    const synced = new SyncedRouting({
      cloudUrl: config.cloudUrl,
      pmlHome: config.pmlHome,
      cloudMode,
      fetch: opts.fetch,
      timeoutMs,
      signal: stop.signal,
    });
    void synced.sync();
    routing = synced;
  }
  const client = config.apiKey
    ? new CloudClient({
      cloudUrl: config.cloudUrl,
      apiKey: config.apiKey,
      fetch: opts.fetch,
      timeoutMs,
      callTimeoutMs: opts.callTimeoutMs ?? Math.max(60_000, timeoutMs),
    })
    : undefined;
  const target = new CloudTarget({
    config,
    routing,
    client,
    fetch: opts.fetch,
    listTimeoutMs: opts.listTimeoutMs ?? Math.min(LIST_BOUND_MS, timeoutMs),
    cache: opts.toolsCache ?? fileToolsCache(config.pmlHome, config.cloudUrl),
    onClose: () => stop.abort(),
    pins,
    hub,
  });
  target.prefetch();
  return { routing, target, metaTools: client ? [cloudSearchTool(target)] : [] };
}
