import type { Config } from "../../config/config.ts";
import { isPmlError } from "../../errors.ts";
import { isToolId } from "../../gateway/names.ts";
import type { RoutingResolver } from "../../routing/routing.ts";
import type { CallToolResult, Tool } from "../../sdk/types.ts";
import { errorResult, type Target, type ToolCall, type ToolInfo } from "../target.ts";
import { byokHeader, declaredVariables } from "./byok.ts";
import type { CloudClient } from "./cloud_client.ts";

/** The message of every cloud tool call when no API key is configured. */
export const NO_API_KEY_MESSAGE =
  "Cloud mode requires PML_API_KEY: run `pml init --api-key <key>` " +
  'or set PML_API_KEY in the environment pml runs in (for example the "env" of the pml entry in ' +
  ".mcp.json). Local tools work without it.";

/** A tool the cloud lists, keyed by tool id. */
interface CloudTool {
  readonly info: ToolInfo;
  /** The name to send in `tools/call`. */
  readonly name: string;
  /** Variables its metadata declares, when it says. */
  readonly env?: readonly string[];
}

/** Dependencies of {@link CloudTarget}. */
export interface CloudTargetDeps {
  readonly config: Pick<Config, "cloudUrl" | "byokEnv" | "env">;
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
  readonly now?: () => number;
  /** Runs on {@link CloudTarget.close} (stops background work of the composition). */
  readonly onClose?: () => void;
}

/** Where a call comes from: the client's signal and progress channel. */
export interface CloudCallChannel {
  readonly signal?: AbortSignal;
  readonly progress?: (progress: number, total?: number, message?: string) => Promise<void>;
}

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
  #tools?: Map<string, CloudTool>;
  #toolsAt = 0;
  #loading?: Promise<void>;

  constructor(deps: CloudTargetDeps) {
    this.#d = deps;
  }

  /** True when an API key is set (cloud mode). */
  get cloudMode(): boolean {
    return this.#d.client !== undefined;
  }

  /** Starts loading the cloud's tool list in the background (cloud mode only). */
  prefetch(): void {
    if (this.#d.client) void this.#refresh();
  }

  async listTools(namespaces?: ReadonlySet<string>): Promise<ToolInfo[]> {
    if (!this.#d.client) return [];
    await this.#freshTools();
    return [...(this.#tools?.values() ?? [])]
      .map((t) => t.info)
      .filter((t) => {
        const ns = t.id.slice(0, t.id.indexOf(":"));
        return ns !== "pml" && (!namespaces || namespaces.has(ns)) && this.#runsHere(t.id);
      });
  }

  /**
   * Every tool routed `server`, and, in cloud mode, every tool the cloud lists (HTTP MCPs of the
   * registry) unless the routing table names its namespace `client`. Local targets are asked
   * first, so a local MCP of the same namespace still wins.
   */
  async provides(toolId: string): Promise<boolean> {
    if (this.#runsHere(toolId) || !this.#d.client) return this.#runsHere(toolId);
    await this.#bounded(
      Promise.all([this.#d.routing.pending, this.#tools ? null : this.#refresh()]),
    );
    return this.#runsHere(toolId);
  }

  #runsHere(toolId: string): boolean {
    const routing = this.#d.routing;
    if (routing.routeOf(toolId) === "server") return true;
    const ns = toolId.slice(0, toolId.indexOf(":"));
    return this.#tools?.has(toolId) === true && !routing.table.client.includes(ns);
  }

  call(call: ToolCall, ctx: CloudCallChannel): Promise<CallToolResult> {
    return this.callCloud(call.toolId, call.args, ctx);
  }

  /** The input schema the cloud lists for `toolId`, if known. */
  schemaOf(toolId: string): Record<string, unknown> | undefined {
    return this.#tools?.get(toolId)?.info.inputSchema;
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
      const { byokEnv, env } = this.#d.config;
      const progress = channel.progress;
      return await client.callTool(this.#tools?.get(toolId)?.name ?? toolId, args, {
        byok: byokHeader(toolId, declared, byokEnv, env),
        signal: channel.signal,
        onprogress: progress ? (p) => void progress(p.progress, p.total, p.message) : undefined,
      });
    });
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
      const { byokEnv, env } = this.#d.config;
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
      const [, unreachable] = await Promise.all([this.#freshTools(), client.open()]);
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
    await this.#d.client?.close();
  }

  /** Waits (bounded) for a tool list; refreshes in the background once it is older than the TTL. */
  async #freshTools(): Promise<void> {
    const now = (this.#d.now ?? Date.now)();
    const stale = now - this.#toolsAt > (this.#d.toolsTtlMs ?? 5 * 60_000);
    if (!this.#tools || stale) {
      const loading = this.#refresh();
      if (!this.#tools) await this.#bounded(loading);
    }
  }

  #refresh(): Promise<void> {
    this.#loading ??= (async () => {
      try {
        const tools = await this.#d.client!.listTools();
        this.#tools = new Map(
          tools.map(toCloudTool).filter((t) => t !== undefined).map((t) => [t.info.id, t]),
        );
        this.#toolsAt = (this.#d.now ?? Date.now)();
      } catch {
        // Offline: keep the last list; calls report the failure.
      } finally {
        this.#loading = undefined;
      }
    })();
    return this.#loading;
  }

  async #bounded(p: Promise<unknown>): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const limit = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.#d.listTimeoutMs ?? 2000);
    });
    await Promise.race([p.catch(() => {}), limit]).finally(() => clearTimeout(timer));
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

function failure(code: string, message: string): CallToolResult {
  return errorResult(message, { status: "error", code, message });
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
    info: {
      id,
      description: tool.description ?? "",
      inputSchema: tool.inputSchema as Record<string, unknown>,
      routing: "server",
    },
  };
}
