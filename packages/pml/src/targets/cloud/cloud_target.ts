import type { Config } from "../../config/config.ts";
import { isPmlError, PmlError } from "../../errors.ts";
import type { RoutingResolver } from "../../routing/routing.ts";
import type { CallToolResult } from "../../sdk/types.ts";
import {
  type CallContext,
  errorResult,
  type PreflightRefusal,
  type Target,
  type ToolCall,
  type ToolInfo,
} from "../target.ts";
import { unapprovedListing } from "../../registry/mcp_pins.ts";
import { integrityRequest } from "../../registry/integrity_request.ts";
import type { ChangedPin, HttpPins } from "./http_pins.ts";
import { byokHeader, declaredVariables } from "./byok.ts";
import type { CloudClient } from "./cloud_client.ts";
import type { CloudToolsCache } from "./tools_cache.ts";
import { type CloudTool, CloudToolList } from "./cloud_tool_list.ts";
import { CloudUpstreams, type RelayedCall } from "./cloud_upstreams.ts";
import { upstreamCallOptions } from "../upstream/upstream_session.ts";
import type { UpstreamHub } from "../upstream/upstream_hub.ts";

/** The message of every cloud tool call when no API key is configured. */
export const NO_API_KEY_MESSAGE =
  "Cloud mode requires PML_API_KEY: run `pml init --api-key <key>` " +
  'or set PML_API_KEY in the environment pml runs in (for example the "env" of the pml entry in ' +
  ".mcp.json). Local tools work without it.";

/** Dependencies of {@link CloudTarget}. */
export interface CloudTargetDeps {
  readonly config: Pick<Config, "cloudUrl" | "byokEnv" | "byokValues">;
  /** Routing; a `pending` sync is awaited (bounded) before refusing a namespace. */
  readonly routing: RoutingResolver & { readonly pending?: Promise<void> };
  /** Absent when no API key is set. */
  readonly client?: CloudClient;
  /** For registry metadata look-ups (`envRequired` of HTTP MCPs). */
  readonly fetch?: typeof fetch;
  /** Longest wait of `tools/list` for the cloud (default 2 s); later lists use the cache. */
  readonly listTimeoutMs?: number;
  /** How long a fetched tool list is used before a background refresh (default 5 min). */
  readonly toolsTtlMs?: number;
  /**
   * After the cloud failed to list its tools, how long `tools/list` uses what it has without asking
   * again (default 30 s); calls still try the cloud.
   */
  readonly retryMs?: number;
  /** The last tool list, kept between runs (default: none kept). */
  readonly cache?: CloudToolsCache;
  readonly now?: () => number;
  /** Runs on {@link CloudTarget.close} (stops background work of the composition). */
  readonly onClose?: () => void;
  /** The lockfile guard of http MCPs (metadata and listed tool definitions). */
  readonly pins?: HttpPins;
  /** Where registry http MCPs' notifications outside a call go (`upstream_hub.ts`). */
  readonly hub?: UpstreamHub;
}

/**
 * Where a call comes from: the client's signal and progress channel, and for a registry http MCP's
 * call what answers its server's requests and log lines (`CallContext`'s).
 */
export type CloudCallChannel = Pick<
  Partial<CallContext>,
  "signal" | "progress" | "sample" | "serverElicit" | "log" | "clientSession"
>;

/**
 * Runs every tool whose routing is `server` on the PML cloud (DESIGN §8) and lists the cloud's
 * tools in `tools/list` (cached, with a bounded wait). Local tools never reach it: the gateway asks
 * local targets first, and `client` namespaces are never `server`.
 */
export class CloudTarget implements Target {
  readonly name = "cloud";
  readonly #d: CloudTargetDeps;
  readonly #abort = new AbortController();
  readonly #declared = new Map<string, Promise<string[]>>();
  /** The cloud's tool list (cloud mode only). */
  readonly #list?: CloudToolList;
  /** The registry http MCPs the cloud proxies: their resources, prompts, completions. */
  readonly upstreams?: CloudUpstreams;

  constructor(deps: CloudTargetDeps) {
    this.#d = deps;
    const list = this.#list = deps.client &&
      new CloudToolList({ ...deps, cloudUrl: deps.config.cloudUrl, client: deps.client });
    const pins = deps.pins;
    this.upstreams = deps.client && list && new CloudUpstreams({
      client: deps.client,
      config: deps.config,
      tools: () => list.tools,
      ensure: () => list.ensure(),
      pinned: pins &&
        (async (ns, tools) => (await pins.check(ns, tools.map((t) => t.info))).length === 0),
      hub: deps.hub,
    });
  }

  get #tools(): ReadonlyMap<string, CloudTool> | undefined {
    return this.#list?.tools;
  }

  /** True when an API key is set (cloud mode). */
  get cloudMode(): boolean {
    return this.#d.client !== undefined;
  }

  /** Starts loading the cloud's tool list in the background (cloud mode only). */
  prefetch(): void {
    void this.#list?.refresh();
  }

  async listTools(namespaces?: ReadonlySet<string>): Promise<ToolInfo[]> {
    if (!this.#list) return [];
    await this.#list.ensure();
    const listed = [...(this.#tools?.values() ?? [])]
      .map((t) => t.info)
      .filter((t) => {
        const ns = t.id.slice(0, t.id.indexOf(":"));
        return ns !== "pml" && (!namespaces || namespaces.has(ns)) && this.#runsHere(t.id);
      });
    // A definition that changed since it was pinned is not shown before it is approved, and a
    // tool that appeared since is not listed at all.
    const unapproved = await this.#d.pins?.changedTools(listed).catch(() => undefined);
    return unapproved?.size
      ? listed.flatMap((t) => unapprovedListing(t, unapproved.get(t.id)) ?? [])
      : listed;
  }

  /**
   * In cloud mode, the tools the cloud lists (its `tools/list`, from memory, from the cache of the
   * last run, or fetched), unless the routing table names the namespace `client`; a tool of a
   * platform `server` namespace that the cloud does not list is unknown. When no list can be had
   * (the cloud does not answer within the call's bound), a `server`-routed tool throws that
   * failure (`CLOUD_UNREACHABLE`), and without an API key `CLOUD_API_KEY_REQUIRED`: the gateway
   * answers with it before asking anyone. Local targets are asked first, so a local MCP of the
   * same namespace still wins.
   */
  async provides(toolId: string): Promise<boolean> {
    const routing = this.#d.routing;
    const server = () => routing.routeOf(toolId) === "server";
    const local = () => routing.table.client.includes(toolId.slice(0, toolId.indexOf(":")));
    const list = this.#list;
    if (!list) {
      if (!server()) return false;
      throw new PmlError("CLOUD_API_KEY_REQUIRED", NO_API_KEY_MESSAGE);
    }
    if (local()) return false;
    // Nothing to wait for (no routing sync, a fresh list): no timer (a call's hot path).
    if (routing.pending || !list.fresh(list.now())) {
      await list.bounded(Promise.all([routing.pending, list.ensure()]));
      if (local()) return false;
    }
    if (!list.tools) {
      if (!server()) return false;
      await list.refresh(); // a call, not a list: the cloud gets the call's bound to answer
      if (!list.tools) throw list.failure;
    }
    if (list.tools.has(toolId)) return true;
    // Not listed: ask the cloud again (at most every MISS_REFRESH_MS) in case it is new there.
    const now = list.now();
    if (now - list.fetchedAt > MISS_REFRESH_MS && !list.backingOff(now)) {
      await list.bounded(list.refresh());
    }
    return list.tools.has(toolId);
  }

  /**
   * Before the question about an `ask` cloud tool: a BYOK key it declares that is not available
   * (not listed in `.pml.json` `env`, or set nowhere) is answered at once, not after an approval.
   */
  async preflight(call: ToolCall): Promise<PreflightRefusal | undefined> {
    if (!this.#d.client || !this.#runsHere(call.toolId)) return undefined;
    const declared = await this.#declaredEnv(call.toolId);
    try {
      byokHeader(call.toolId, declared, this.#d.config.byokEnv, this.#d.config.byokValues);
    } catch (err) {
      if (isPmlError(err, "BYOK_MISSING")) {
        return { refusal: { code: err.code, message: err.message } };
      }
    }
    return undefined;
  }

  #runsHere(toolId: string): boolean {
    const routing = this.#d.routing;
    if (routing.routeOf(toolId) === "server") return true;
    const ns = toolId.slice(0, toolId.indexOf(":"));
    return this.#tools?.has(toolId) === true && !routing.table.client.includes(ns);
  }

  async call(
    call: ToolCall,
    ctx: CloudCallChannel & Partial<CallContext>,
  ): Promise<CallToolResult> {
    const pins = this.#d.pins;
    if (pins && ctx.ask && this.#list) {
      let changes: ChangedPin[];
      try {
        await this.#list.ensure();
        const listed = [...(this.#tools?.values() ?? [])].map((t) => t.info)
          .filter((t) => t.id.startsWith(`${call.ns}:`));
        changes = await pins.check(call.ns, listed);
      } catch (err) {
        if (isPmlError(err)) return failure(err.code, err.message);
        throw err;
      }
      if (changes.length) return await this.#askIntegrity(call, ctx as CallContext, changes);
    }
    return await this.callCloud(call.toolId, call.args, ctx);
  }

  /** One `integrity` approval for every changed pin of an http MCP; the call runs after "yes". */
  #askIntegrity(
    call: ToolCall,
    ctx: CallContext,
    changes: readonly ChangedPin[],
  ): Promise<CallToolResult> {
    return ctx.ask(
      integrityRequest(call.toolId, changes),
      async (decision) => {
        if (decision === "no") {
          for (const c of changes) await c.refuse();
          return errorResult(
            `Integrity check failed for "${call.toolId}": the changed ${
              changes.map((c) => c.what === "metadata" ? "metadata" : "tool definitions").join(
                " and ",
              )
            } of ${
              changes[0].name
            } were refused; nothing was sent and .pml/mcp.lock keeps the old pin`,
            { status: "error", code: "INTEGRITY_REFUSED", name: changes[0].name },
          );
        }
        for (const c of changes) await c.accept();
        return await this.callCloud(call.toolId, call.args, ctx);
      },
    );
  }

  /** The input schema the cloud lists for `toolId`, if known. */
  schemaOf(toolId: string): Record<string, unknown> | undefined {
    return this.#tools?.get(toolId)?.info.inputSchema;
  }

  /** The description the cloud lists for `toolId`, if known. */
  descriptionOf(toolId: string): string | undefined {
    return this.#tools?.get(toolId)?.info.description || undefined;
  }

  /** Calls `toolId` on the cloud (also used by the `pml:search` meta tool). */
  callCloud(
    toolId: string,
    args: Record<string, unknown>,
    channel: CloudCallChannel = {},
  ): Promise<CallToolResult> {
    // The metadata look-up, the tool list and the session's opening overlap (see #withClient):
    // a silent cloud costs one timeout, not their sum.
    // Without a key nothing is sent to the cloud, not even a metadata look-up.
    const declaring = this.#d.client ? this.#declaredEnv(toolId) : Promise.resolve([]);
    return this.#withClient(async (client) => {
      const declared = await declaring;
      const { byokEnv, byokValues: env } = this.#d.config;
      const progress = channel.progress;
      const tool = this.#tools?.get(toolId);
      const relayed = tool?.http ? this.#relayed(toolId, channel) : undefined;
      try {
        return await client.callTool(tool?.name ?? toolId, args, {
          byok: byokHeader(toolId, declared, byokEnv, env),
          signal: channel.signal,
          onprogress: progress ? (p) => void progress(p.progress, p.total, p.message) : undefined,
          onmessage: relayed?.deliver,
        });
      } finally {
        relayed?.end();
      }
    });
  }

  /**
   * A registry http MCP's call: its server's requests and log lines, which the cloud streams with
   * the call, are answered by that server's session under the rules of a fronted server
   * (`sampling:<ns>` with no tools for the model, elicitation labelled its own).
   */
  #relayed(toolId: string, channel: CloudCallChannel): RelayedCall | undefined {
    const ns = toolId.slice(0, toolId.indexOf(":"));
    return this.upstreams?.relayed(
      ns,
      upstreamCallOptions(ns, channel, { timeoutMs: 0, allowedToolPatterns: [] }),
    );
  }

  /**
   * Sends `pml:execute` to the cloud (DESIGN §9) with, in `X-PML-BYOK`, the keys of every cloud
   * tool in `toolsUsed` (the server may run the code, and with it those tools). The answer is the
   * server's result: a finished execution, an error, or `{"status":"execute_locally", …}`.
   * Transport failures come back as `isError` results with code `CLOUD_*`, a missing key as
   * `BYOK_MISSING`: the caller then runs the code locally, where that call fails on its own.
   */
  executeRemote(
    args: Record<string, unknown>,
    toolsUsed: readonly string[],
    channel: CloudCallChannel = {},
  ): Promise<CallToolResult> {
    const known = this.#d.client ? toolsUsed.filter((id) => this.#runsHere(id)) : [];
    const declaring = Promise.all(known.map((id) => this.#declaredEnv(id))); // overlaps the session
    return this.#withClient(async (client) => {
      const { byokEnv, byokValues: env } = this.#d.config;
      const needed = new Set<string>();
      const early = await declaring;
      const cloudTools = toolsUsed.filter((id) => this.#runsHere(id));
      const declarations = await Promise.all(
        cloudTools.map((id) =>
          known.includes(id) ? early[known.indexOf(id)] : this.#declaredEnv(id)
        ),
      );
      for (const [i, toolId] of cloudTools.entries()) {
        const declared = declarations[i];
        byokHeader(toolId, declared, byokEnv, env); // throws BYOK_MISSING naming the tool
        for (const v of declared) needed.add(v);
      }
      return await client.callTool(this.#tools?.get("pml:execute")?.name ?? "pml:execute", args, {
        byok: byokHeader("pml:execute", [...needed], byokEnv, env),
        signal: channel.signal,
      });
    });
  }

  /** Runs `call` with the cloud client (fresh tool list); failures become `isError` results. */
  async #withClient(
    call: (client: CloudClient) => Promise<CallToolResult>,
  ): Promise<CallToolResult> {
    const client = this.#d.client;
    if (!client) return failure("CLOUD_API_KEY_REQUIRED", NO_API_KEY_MESSAGE);
    try {
      const [, unreachable] = await Promise.all([this.#list?.ensure(), client.open()]);
      if (unreachable) throw unreachable; // one bound for the whole call, not one per request
      return await call(client);
    } catch (err) {
      if (isPmlError(err)) return failure(err.code, err.message);
      throw err;
    }
  }

  /** Variables `toolId` declares: from the cloud's list, else from its registry metadata. */
  async #declaredEnv(toolId: string): Promise<readonly string[]> {
    return this.#tools?.get(toolId)?.env ??
      await this.#registryEnv(toolId.slice(0, toolId.indexOf(":")));
  }

  async close(): Promise<void> {
    this.#abort.abort();
    this.#d.onClose?.();
    await this.upstreams?.close();
    await this.#d.client?.close();
  }

  /** `envRequired` of the HTTP MCP serving namespace `ns`, from the registry (cached). */
  #registryEnv(ns: string): Promise<string[]> {
    let found = this.#declared.get(ns);
    if (!found) {
      found = (async () => {
        const res = await (this.#d.fetch ?? fetch)(
          `${this.#d.config.cloudUrl}/mcp/pml.mcp.${encodeURIComponent(ns)}.server`,
          { signal: AbortSignal.any([AbortSignal.timeout(10_000), this.#abort.signal]) },
        );
        if (res.status === 404) {
          await res.body?.cancel();
          return [];
        }
        if (!res.ok) throw new Error(`registry answered HTTP ${res.status}`);
        return declaredVariables(await res.json()) ?? [];
      })();
      found.catch(() => this.#declared.delete(ns));
      this.#declared.set(ns, found);
    }
    // Unknown declarations: send no key rather than one the tool did not ask for.
    return found.catch(() => []);
  }
}

/** A tool id the cloud did not list is looked up again at most this often (ms). */
const MISS_REFRESH_MS = 30_000;

function failure(code: string, message: string): CallToolResult {
  return errorResult(message, { status: "error", code, message });
}
