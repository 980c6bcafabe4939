import type { CallToolResult } from "../../sdk/types.ts";
import { printable } from "../../sandbox/printable.ts";
import {
  type LaunchSpec,
  missingEnv,
  missingEnvMessage,
  unconfinedNote,
} from "../../deps/launch.ts";
import type { DependencyMeta, MetadataSource } from "../../deps/metadata.ts";
import { errorMessage, isPmlError, PmlError } from "../../errors.ts";
import type { ApprovalDecision } from "../../permission/approvals.ts";
import { askIntegrity } from "../ask_integrity.ts";
import { missingEnvResult } from "../missing_env.ts";
import { type McpPins, unapprovedListing } from "../../registry/mcp_pins.ts";
import type { RoutingResolver } from "../../routing/routing.ts";
import {
  type CallContext,
  errorResult,
  type Preflight,
  type PreflightRefusal,
  type Target,
  type ToolCall,
  type ToolInfo,
  type Upstreams,
} from "../target.ts";
import { guardedCall } from "../upstream/tool_guard.ts";
import { listedTools, ServerPins } from "../upstream/server_pins.ts";
import { upstreamCallOptions, type UpstreamSession } from "../upstream/upstream_session.ts";
import type { StdioProcessManager } from "./process_manager.ts";
import { type StdioLaunchDeps, StdioLaunches } from "./launches.ts";
import { GrantedMetadata } from "./granted_metadata.ts";
import { isPrivate, lockName, metadataPin } from "./metadata_pin.ts";
import { BoundedLoad, ListBoundExceeded } from "../list_bound.ts";

/** What a {@link StdioTarget} needs; every piece of I/O is injected. */
export interface StdioTargetDeps extends StdioLaunchDeps {
  readonly source: MetadataSource;
  readonly manager: StdioProcessManager;
  readonly routing: RoutingResolver;
  /** Per-call timeout (default 60 s). */
  readonly callTimeoutMs?: number;
  /** `.pml.json` `sandbox.net`: hosts granted to every server on top of what it declares. */
  readonly net?: readonly string[];
  /**
   * Pins in `.pml/mcp.lock`: the metadata of registry and catalogue servers, and the tool
   * definitions each running server lists (`private_mcps` servers are the user's own: not pinned).
   */
  readonly pins?: McpPins;
}

const DEFAULT_CALL_TIMEOUT_MS = 60_000;

/**
 * Stdio MCP servers as tools (DESIGN §8 "stdio dependency"). `tools/list` comes from metadata
 * without starting anything. The first call asks a `dependency` approval, installs the pinned npm
 * package (progress reported), verifies its integrity, records it in `.pml/deps.json`, and starts the
 * server under Deno with the permissions its metadata declares; later calls go straight to the
 * running process.
 */
export class StdioTarget implements Target {
  readonly name = "stdio";
  readonly upstreams: Upstreams;
  readonly #d: StdioTargetDeps;
  /** The pins checked in this session, and the guards of the servers' own tool lists. */
  readonly #pins: ServerPins;
  /** Per server: its metadata look-up in `tools/list`, waited for at most once while it is late. */
  readonly #metaLoads = new Map<string, BoundedLoad>();
  readonly #launch: StdioLaunches;
  readonly #metas: GrantedMetadata;

  constructor(deps: StdioTargetDeps) {
    this.#d = deps;
    this.#launch = new StdioLaunches(deps);
    this.#metas = new GrantedMetadata(deps.source, deps.net ?? []);
    this.#pins = new ServerPins(deps.pins);
    this.upstreams = {
      origin: "local",
      servers: async (ns) => (await deps.source.list()).filter((s) => !ns || ns.has(s)),
      session: (server) => this.#session(server),
    };
  }

  async listTools(namespaces?: ReadonlySet<string>): Promise<ToolInfo[]> {
    const tools: ToolInfo[] = [];
    const servers = (await this.#d.source.list()).filter((s) => !namespaces || namespaces.has(s));
    // Looked up together, within the list's bound: a silent registry costs the list 2 s once, and
    // a server whose metadata is late is listed next time (its look-up goes on).
    const metas = await Promise.all(servers.map(async (server) => {
      try {
        let loads = this.#metaLoads.get(server);
        if (!loads) this.#metaLoads.set(server, loads = new BoundedLoad());
        return await loads.run(() => this.#d.source.get(server));
      } catch (err) {
        if (!(err instanceof ListBoundExceeded)) {
          console.error(printable(`pml: skipping stdio server "${server}": ${errorMessage(err)}`));
        }
        return undefined;
      }
    }));
    for (const meta of metas) {
      if (!meta) continue;
      const server = meta.server;
      // A definition that changed since it was pinned is not shown before it is approved, and a
      // tool that appeared since is not listed at all.
      const unapproved = this.#d.pins && !isPrivate(meta)
        ? await this.#d.pins.changedMetadataTools(lockName(meta), metadataPin(meta)).catch(() =>
          undefined
        )
        : undefined;
      if (!meta.tools.length) {
        tools.push(...await this.#ownTools(meta));
        continue;
      }
      // A private server's declared names get the definitions it gave itself once pinned.
      const own = isPrivate(meta)
        ? await this.#d.pins?.pinnedDefinitions(lockName(meta)).catch(() => undefined)
        : undefined;
      for (const t of meta.tools) {
        const id = `${server}:${t.action}`;
        const real = own?.find((d) => d.name === t.action);
        const routing = this.#d.routing.routeOf(id);
        const listed = unapprovedListing(
          real
            ? listedTools(server, [real], () => routing)[0]
            : { id, description: t.description, inputSchema: t.inputSchema, routing },
          unapproved?.get(id),
        );
        if (listed) tools.push(listed);
      }
    }
    return tools;
  }

  provides(toolId: string): Promise<boolean> {
    const now = this.providesNow(toolId);
    return now === undefined ? this.#provides(toolId, toolId.indexOf(":")) : Promise.resolve(now);
  }

  /** Answered from metadata known without waiting (loaded, not expired) with a declared list. */
  providesNow(toolId: string): boolean | undefined {
    const colon = toolId.indexOf(":");
    const known = this.#d.source.peek?.(toolId.slice(0, colon));
    if (known === null) return false;
    if (!known?.tools.length) return undefined;
    const action = toolId.slice(colon + 1);
    return known.tools.some((t) => t.action === action);
  }

  async #provides(toolId: string, colon: number): Promise<boolean> {
    const meta = await this.#d.source.get(toolId.slice(0, colon)).catch(() => undefined);
    const action = toolId.slice(colon + 1);
    if (!meta) return false;
    if (meta.tools.length) return meta.tools.some((t) => t.action === action);
    // No declared list: the server's own, once pinned; before that any action (the call asks).
    const own = await this.#d.pins?.pinnedDefinitions(lockName(meta)).catch(() => undefined);
    return !own || own.some((t) => t.name === action);
  }

  /**
   * The tools of a server that declares none (a `private_mcps` entry, an imported server): the
   * definitions it listed itself, pinned in `.pml/mcp.lock`, with its annotations. Not pinned yet
   * and its run already approved (`.pml/deps.json`): started now to read them. Otherwise none until
   * its first call (which asks) or `pml import`.
   */
  async #ownTools(meta: DependencyMeta): Promise<ToolInfo[]> {
    const pins = this.#d.pins;
    if (!pins) return [];
    let defs = await pins.pinnedDefinitions(lockName(meta)).catch(() => undefined);
    if (!defs && !missingEnv(meta, this.#d.env).length && !this.#launch.wallRefusal(meta)) {
      try {
        const spec = await this.#launch.recorded(meta);
        if (spec) defs = await this.#readTools(meta, spec);
        else {
          console.error(
            `pml: "${meta.server}" declares no tools: they are read from the server on its first ` +
              `start, after its run is approved: a call to one of its tools asks for it (\`pml ` +
              `import\` sets up the servers it brings, not one .pml.json has already)`,
          );
        }
      } catch (err) {
        console.error(
          printable(`pml: cannot read the tools of "${meta.server}": ${errorMessage(err)}`),
        );
      }
    }
    return listedTools(meta.server, defs ?? [], (id) => this.#d.routing.routeOf(id));
  }

  /** Starts the server (approved, installed) and pins its own tool list: the definitions pinned. */
  async #readTools(meta: DependencyMeta, spec: LaunchSpec) {
    const pins = this.#d.pins!;
    if (isPrivate(meta)) await this.#pinMetadata(meta);
    else if (!this.#pins.checked(meta)) {
      // A registry's metadata: a change is the human's to decide, on the next call.
      const check = await this.#pins.checkMetadata(meta, meta.server, metadataPin(meta));
      if (check.kind === "changed") return;
    }
    this.#pins.guardTools(meta.server);
    await this.#d.manager.listTools(spec, {
      timeoutMs: this.#d.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
      verify: this.#pins.guard(meta.server),
    });
    return await pins.pinnedDefinitions(lockName(meta));
  }

  /**
   * Pins the metadata of a `private_mcps` server: the user's own entry in their trusted
   * `.pml.json`, so a change there is recorded, not asked (its tools' definitions still are).
   */
  #pinMetadata(meta: DependencyMeta): Promise<void> {
    return this.#pins.recordOwn(meta, meta.server, metadataPin(meta));
  }

  /**
   * `pml import` (a human's decision on the terminal): installs a server (npm: pinned package,
   * integrity verified), records its run as approved, starts it and pins its own tool list.
   * Returns the pinned definitions.
   */
  async pinServer(
    server: string,
    progress?: (message: string) => void,
  ): Promise<readonly { name: string; description: string }[]> {
    const meta = await this.#metas.get(server);
    if (!meta) throw new PmlError("IMPORT_FAILED", `No stdio server "${server}" in .pml.json`);
    const missing = missingEnv(meta, this.#d.env);
    if (missing.length) {
      throw new PmlError("api_key_required", missingEnvMessage(meta.server, missing));
    }
    const refusal = this.#launch.wallRefusal(meta);
    if (refusal) throw new PmlError("NO_OS_SANDBOX", refusal);
    await this.#pinMetadata(meta);
    const spec = await this.#launch.recorded(meta) ??
      await this.#launch.install(meta, {
        progress: (_step, _total, message) => Promise.resolve(progress?.(message ?? "")),
      });
    this.#launch.setReady(meta, spec);
    return (await this.#readTools(meta, spec)) ?? [];
  }

  /**
   * For the gateway's question about an `ask` tool: the `dependency` approval this call would ask
   * next (a first install or first run), so that one question names both. `undefined` when nothing
   * would be asked (installed already, or the call is refused before any question).
   */
  async preflight(call: ToolCall): Promise<Preflight | PreflightRefusal | undefined> {
    const meta = await this.#metas.get(call.ns).catch(() => undefined);
    return meta && await this.#launch.preflight(meta);
  }

  /**
   * The session of `server` when running it asks nothing now (its run approved and installed, its
   * variables set, the OS sandbox there, its metadata as pinned): started if it is not running.
   */
  async #session(server: string): Promise<UpstreamSession | undefined> {
    const meta = await this.#metas.get(server).catch(() => undefined);
    if (!meta || missingEnv(meta, this.#d.env).length || this.#launch.wallRefusal(meta)) return;
    if (isPrivate(meta)) await this.#pinMetadata(meta);
    else if (
      !this.#pins.checked(meta) &&
      (await this.#pins.checkMetadata(meta, server, metadataPin(meta))).kind === "changed"
    ) return;
    const spec = this.#launch.readyFor(meta) ?? await this.#launch.recorded(meta).catch(() => {});
    if (!spec) return;
    this.#launch.setReady(meta, spec);
    return await this.#d.manager.session(spec);
  }

  call(call: ToolCall, ctx: CallContext): Promise<CallToolResult> {
    // Warm: the same metadata object passed every check below for the launch spec made for it
    // (`#ready`: the environment is a snapshot and the OS sandbox is found once, so they answer
    // the same for it; its pin was checked in this session). Straight to the running server.
    const meta = this.#metas.now(call.ns);
    const spec = meta && this.#launch.warm(meta);
    if (spec && this.#pins.checked(meta)) return this.#run(meta, spec, call, ctx);
    return this.#call(call, ctx);
  }

  async #call(call: ToolCall, ctx: CallContext): Promise<CallToolResult> {
    const meta = await this.#metas.get(call.ns);
    if (!meta) return errorResult(`Unknown tool "${call.toolId}"`);
    const missing = missingEnv(meta, this.#d.env);
    if (missing.length) {
      return missingEnvResult(meta.server, missing);
    }
    {
      // An npm server or a raw command is a third party's code: it runs inside the OS sandbox, or
      // not at all (unless .pml.json accepts it unconfined). Said before anything is asked or
      // installed.
      const refusal = this.#launch.wallRefusal(meta);
      if (refusal) {
        await this.#d.audit.write("sandbox_violation", {
          tool: call.toolId,
          message: `refused: no OS sandbox`,
        });
        return errorResult(refusal, {
          status: "error",
          code: "NO_OS_SANDBOX",
          server: meta.server,
        });
      }
    }
    const pins = this.#d.pins;
    this.#pins.guardTools(meta.server);
    if (isPrivate(meta)) await this.#pinMetadata(meta);
    if (pins && !this.#pins.checked(meta)) {
      const check = await this.#pins.checkMetadata(meta, meta.server, metadataPin(meta));
      if (check.kind === "changed") {
        const state = (await pins.changedMetadataTools(lockName(meta), metadataPin(meta)))
          .get(call.toolId);
        return await askIntegrity(check, call, ctx, state === "added", async () => {
          this.#pins.markChecked(meta);
          this.#launch.dropReady(meta.server);
          // The question named the new package: approving it approves its install.
          return await this.#prepare(meta, call, ctx, true);
        });
      }
    }
    return await this.#prepare(meta, call, ctx, false);
  }

  async #prepare(
    meta: DependencyMeta,
    call: ToolCall,
    ctx: CallContext,
    installApproved: boolean,
  ): Promise<CallToolResult> {
    const ready = this.#launch.readyFor(meta);
    if (ready) return await this.#run(meta, ready, call, ctx);
    let spec: LaunchSpec | undefined;
    try {
      spec = await this.#launch.recorded(meta);
    } catch (err) {
      return await this.#launch.refuse(meta, err);
    }
    if (spec) {
      this.#launch.setReady(meta, spec);
      return await this.#run(meta, spec, call, ctx);
    }
    if (installApproved) return await this.#afterApproval("yes", meta, call, ctx);
    return await ctx.ask(
      this.#launch.dependencyRequest(meta),
      (decision) => this.#afterApproval(decision, meta, call, ctx),
    );
  }

  async close(): Promise<void> {
    // The process manager is closed by its owner (the gateway's resources).
  }

  async #afterApproval(
    decision: ApprovalDecision,
    meta: DependencyMeta,
    call: ToolCall,
    ctx: CallContext,
  ): Promise<CallToolResult> {
    if (decision === "no") {
      return errorResult(
        meta.package
          ? `Installation of ${meta.server}@${meta.package.version} refused: nothing was installed and "${call.toolId}" did not run`
          : `Running ${meta.server} refused: "${call.toolId}" did not run`,
      );
    }
    let spec: LaunchSpec;
    try {
      spec = await this.#launch.installOnce(meta, ctx);
    } catch (err) {
      return await this.#launch.refuse(meta, err);
    }
    return await this.#run(meta, spec, call, ctx);
  }

  #run(
    meta: DependencyMeta,
    spec: LaunchSpec,
    call: ToolCall,
    ctx: CallContext,
  ): Promise<CallToolResult> {
    const opts = upstreamCallOptions(spec.server, ctx, {
      timeoutMs: this.#d.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
      allowedToolPatterns: meta.allowedToolPatterns,
      verify: this.#pins.guard(spec.server),
    });
    return guardedCall(call, ctx, async () => {
      let result: CallToolResult;
      try {
        result = await this.#d.manager.call(spec, call.toolId, call.action, call.args, opts);
      } catch (err) {
        if (isPmlError(err)) return errorResult(err.message, { status: "error", code: err.code });
        throw err;
      }
      if (!spec.unconfined) return result;
      return {
        ...result,
        content: [{ type: "text", text: unconfinedNote(spec.unconfined) }, ...result.content],
      };
    });
  }
}

export { metadataPin };
