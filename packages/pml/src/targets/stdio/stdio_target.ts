import { join, relative } from "node:path";
import type { CallToolResult, Tool } from "../../sdk/types.ts";
import type { AuditLog } from "../../audit/audit.ts";
import type { DepsState } from "../../deps/deps_state.ts";
import type { InstalledPackage, Installer } from "../../deps/installer.ts";
import {
  commandLaunch,
  denoLaunch,
  type LaunchSpec,
  missingEnv,
  missingEnvMessage,
  osWallRefusal,
  unconfinedNote,
} from "../../deps/launch.ts";
import { detectOsSandbox, type OsSandboxStatus } from "../../sandbox/os_sandbox.ts";
import { type DependencyMeta, type MetadataSource, unpinnedWarning } from "../../deps/metadata.ts";
import { describeDenoGrants, withNetGrants } from "../../deps/grants.ts";
import { errorMessage, isPmlError, PmlError } from "../../errors.ts";
import type { ApprovalDecision, ApprovalRequest } from "../../permission/approvals.ts";
import { askIntegrity } from "../ask_integrity.ts";
import { missingEnvResult } from "../missing_env.ts";
import {
  type ChangedPin,
  type McpPins,
  type MetadataPin,
  unapprovedListing,
} from "../../registry/mcp_pins.ts";
import type { RoutingResolver } from "../../routing/routing.ts";
import {
  type CallContext,
  errorResult,
  type Preflight,
  type PreflightRefusal,
  type Target,
  type ToolCall,
  type ToolInfo,
} from "../target.ts";
import type { StdioProcessManager } from "./process_manager.ts";
import { BoundedLoad, ListBoundExceeded } from "../list_bound.ts";

/** What a {@link StdioTarget} needs; every piece of I/O is injected. */
export interface StdioTargetDeps {
  readonly source: MetadataSource;
  readonly installer: Installer;
  readonly manager: StdioProcessManager;
  readonly state: DepsState;
  readonly audit: AuditLog;
  readonly routing: RoutingResolver;
  readonly workspace: string;
  /** Environment snapshot: declared variables are taken from here. */
  readonly env: Readonly<Record<string, string>>;
  /** Where npm packages are installed, one folder per `<server>@<version>`. */
  readonly depsDir: string;
  readonly denoPath: string;
  readonly denoDir: string;
  /** Per-call timeout (default 60 s). */
  readonly callTimeoutMs?: number;
  /** `.pml.json` `sandbox.unconfined`: npm servers may run without the OS sandbox. */
  readonly unconfined?: boolean;
  /** Injectable for tests (default: look for bubblewrap once). */
  readonly osSandbox?: OsSandboxStatus;
  /** `.pml.json` `sandbox.net`: hosts granted to every server on top of what it declares. */
  readonly net?: readonly string[];
  /** `.pml.json` `sandbox.deny`: secrets hidden besides the built-in ones. */
  readonly deny?: readonly string[];
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
  readonly #d: StdioTargetDeps;
  /**
   * Verified launch specs, by server, with the metadata version they were made for and the
   * metadata object that passed the call's checks (env, OS wall, pins) when it was set: a call with
   * that same object runs without them (`call`'s warm path).
   */
  readonly #ready = new Map<string, { pin: string; spec: LaunchSpec; meta: DependencyMeta }>();
  /** The metadata with `.pml.json`'s `sandbox.net` grants, per object of the source. */
  readonly #granted = new WeakMap<DependencyMeta, DependencyMeta>();
  /** The rug-pull guard of each pinned server (one function per server, see `#verifier`). */
  readonly #verifiers = new Map<
    string,
    (listTools: () => Promise<readonly Tool[]>) => Promise<void>
  >();
  readonly #installs = new Map<string, Promise<LaunchSpec>>();
  /** Metadata objects whose pin was checked in this session. */
  readonly #pinned = new WeakSet<DependencyMeta>();
  /** Servers whose metadata is pinned: their own tool lists are checked too. */
  readonly #pinnedServers = new Set<string>();
  /** Per server: its metadata look-up in `tools/list`, waited for at most once while it is late. */
  readonly #metaLoads = new Map<string, BoundedLoad>();
  #osStatus?: OsSandboxStatus;

  constructor(deps: StdioTargetDeps) {
    this.#d = deps;
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
          console.error(`pml: skipping stdio server "${server}": ${errorMessage(err)}`);
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
        const listed = unapprovedListing(
          {
            id,
            description: real?.description ?? t.description,
            inputSchema: real?.inputSchema ?? t.inputSchema,
            ...(real?.annotations ? { annotations: real.annotations } : {}),
          },
          unapproved?.get(id),
        );
        if (listed) tools.push({ ...listed, routing: this.#d.routing.routeOf(id) });
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
    if (!defs && !missingEnv(meta, this.#d.env).length && !this.#wallRefusal(meta)) {
      try {
        const spec = await this.#recorded(meta);
        if (spec) defs = await this.#readTools(meta, spec);
        else {
          console.error(
            `pml: "${meta.server}" declares no tools: they are read from the server on its first ` +
              `start, after its run is approved (call one of its tools, or run \`pml import\`)`,
          );
        }
      } catch (err) {
        console.error(`pml: cannot read the tools of "${meta.server}": ${errorMessage(err)}`);
      }
    }
    return (defs ?? []).map((d) => {
      const id = `${meta.server}:${d.name}`;
      const annotations = (d as { annotations?: ToolInfo["annotations"] }).annotations;
      return {
        id,
        description: d.description,
        inputSchema: d.inputSchema,
        routing: this.#d.routing.routeOf(id),
        ...(annotations ? { annotations } : {}),
      };
    });
  }

  /** Starts the server (approved, installed) and pins its own tool list: the definitions pinned. */
  async #readTools(meta: DependencyMeta, spec: LaunchSpec) {
    const pins = this.#d.pins!;
    if (isPrivate(meta)) await this.#pinMetadata(meta);
    else if (!this.#pinned.has(meta)) {
      // A registry's metadata: a change is the human's to decide, on the next call.
      if ((await pins.checkMetadata(lockName(meta), metadataPin(meta))).kind === "changed") return;
      this.#pinned.add(meta);
    }
    this.#pinnedServers.add(meta.server);
    await this.#d.manager.listTools(spec, {
      timeoutMs: this.#d.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
      verify: this.#verifier(meta.server),
    });
    return await pins.pinnedDefinitions(lockName(meta));
  }

  /**
   * Pins the metadata of a `private_mcps` server: the user's own entry in their trusted
   * `.pml.json`, so a change there is recorded, not asked (its tools' definitions still are).
   */
  async #pinMetadata(meta: DependencyMeta): Promise<void> {
    const pins = this.#d.pins;
    if (!pins || this.#pinned.has(meta)) return;
    const check = await pins.checkMetadata(lockName(meta), metadataPin(meta));
    if (check.kind === "changed") await check.accept();
    this.#pinned.add(meta);
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
    const meta = await this.#meta(server);
    if (!meta) throw new PmlError("IMPORT_FAILED", `No stdio server "${server}" in .pml.json`);
    const missing = missingEnv(meta, this.#d.env);
    if (missing.length) {
      throw new PmlError("api_key_required", missingEnvMessage(meta.server, missing));
    }
    const refusal = this.#wallRefusal(meta);
    if (refusal) throw new PmlError("NO_OS_SANDBOX", refusal);
    await this.#pinMetadata(meta);
    const spec = await this.#recorded(meta) ??
      await this.#install(meta, {
        progress: (_step, _total, message) => Promise.resolve(progress?.(message ?? "")),
      });
    this.#ready.set(meta.server, { pin: pinOf(meta), spec, meta });
    return (await this.#readTools(meta, spec)) ?? [];
  }

  /**
   * For the gateway's question about an `ask` tool: the `dependency` approval this call would ask
   * next (a first install or first run), so that one question names both. `undefined` when nothing
   * would be asked (installed already, or the call is refused before any question).
   */
  async preflight(call: ToolCall): Promise<Preflight | PreflightRefusal | undefined> {
    const meta = await this.#meta(call.ns).catch(() => undefined);
    if (!meta) return undefined;
    const missing = missingEnv(meta, this.#d.env);
    // Nothing to ask about: the call cannot run without the variable, whatever the answer.
    if (missing.length) {
      return {
        refusal: { code: "api_key_required", message: missingEnvMessage(meta.server, missing) },
      };
    }
    if (this.#wallRefusal(meta)) return undefined;
    const warning = unpinnedOf(meta);
    // Installed already: nothing to set up, but an unpinned package is said in every question.
    const installed: Preflight | undefined = warning
      ? { description: warning + ".", context: { warning } }
      : undefined;
    if (this.#ready.get(meta.server)?.pin === pinOf(meta)) return installed;
    if (await this.#recorded(meta).catch(() => "refused")) return installed;
    const request = this.#dependencyRequest(meta);
    const { what, grants } = this.#whatRuns(meta);
    return {
      description: (warning ? `${warning}. ` : "") +
        `Its first use ${meta.package ? "installs" : "runs"} ${what} (${grants}).`,
      context: { dependency: request.context },
      covers: request,
    };
  }

  call(call: ToolCall, ctx: CallContext): Promise<CallToolResult> {
    // Warm: the same metadata object passed every check below for the launch spec made for it
    // (`#ready`: the environment is a snapshot and the OS sandbox is found once, so they answer
    // the same for it; its pin was checked in this session). Straight to the running server.
    const meta = this.#metaNow(call.ns);
    const ready = meta && this.#ready.get(meta.server);
    if (ready && ready.meta === meta && (!this.#d.pins || this.#pinned.has(meta))) {
      return this.#run(meta, ready.spec, call, ctx);
    }
    return this.#call(call, ctx);
  }

  async #call(call: ToolCall, ctx: CallContext): Promise<CallToolResult> {
    const meta = await this.#meta(call.ns);
    if (!meta) return errorResult(`Unknown tool "${call.toolId}"`);
    const missing = missingEnv(meta, this.#d.env);
    if (missing.length) {
      return missingEnvResult(meta.server, missing);
    }
    {
      // An npm server or a raw command is a third party's code: it runs inside the OS sandbox, or
      // not at all (unless .pml.json accepts it unconfined). Said before anything is asked or
      // installed.
      const refusal = this.#wallRefusal(meta);
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
    if (pins) this.#pinnedServers.add(meta.server);
    if (pins && isPrivate(meta)) await this.#pinMetadata(meta);
    if (pins && !this.#pinned.has(meta)) {
      const check = await pins.checkMetadata(lockName(meta), metadataPin(meta));
      if (check.kind === "changed") {
        const state = (await pins.changedMetadataTools(lockName(meta), metadataPin(meta)))
          .get(call.toolId);
        return await askIntegrity(check, call, ctx, state === "added", async () => {
          this.#pinned.add(meta);
          this.#ready.delete(meta.server);
          // The question named the new package: approving it approves its install.
          return await this.#prepare(meta, call, ctx, true);
        });
      }
      this.#pinned.add(meta);
    }
    return await this.#prepare(meta, call, ctx, false);
  }

  async #prepare(
    meta: DependencyMeta,
    call: ToolCall,
    ctx: CallContext,
    installApproved: boolean,
  ): Promise<CallToolResult> {
    const pin = pinOf(meta);
    const ready = this.#ready.get(meta.server);
    if (ready?.pin === pin) {
      if (ready.meta !== meta) this.#ready.set(meta.server, { ...ready, meta });
      return await this.#run(meta, ready.spec, call, ctx);
    }
    let spec: LaunchSpec | undefined;
    try {
      spec = await this.#recorded(meta);
    } catch (err) {
      return await this.#refuse(meta, err);
    }
    if (spec) {
      this.#ready.set(meta.server, { pin, spec, meta });
      return await this.#run(meta, spec, call, ctx);
    }
    if (installApproved) return await this.#afterApproval("yes", meta, call, ctx);
    return await ctx.ask(
      this.#dependencyRequest(meta),
      (decision) => this.#afterApproval(decision, meta, call, ctx),
    );
  }

  /**
   * The metadata of `server`, with the network hosts `.pml.json` `sandbox.net` grants added to
   * what it declares: every host is reached through the sandbox's proxy, which lets only those
   * through, whatever runs inside (an npm server under Deno or a raw command).
   */
  async #meta(server: string): Promise<DependencyMeta | undefined> {
    const known = this.#metaNow(server);
    if (known !== undefined) return known ?? undefined;
    const meta = await this.#d.source.get(server);
    return meta && this.#withGrants(meta);
  }

  /** {@link StdioTarget.#meta} when the source answers without waiting (`MetadataSource.peek`). */
  #metaNow(server: string): DependencyMeta | null | undefined {
    const meta = this.#d.source.peek?.(server);
    return meta && this.#withGrants(meta);
  }

  /** One granted object per metadata object: what was checked for it is known by identity. */
  #withGrants(meta: DependencyMeta): DependencyMeta {
    let granted = this.#granted.get(meta);
    if (!granted) this.#granted.set(meta, granted = withNetGrants(meta, this.#d.net ?? []));
    return granted;
  }

  #wallRefusal(meta: DependencyMeta): string | undefined {
    return osWallRefusal(
      meta.server,
      this.#os(),
      this.#d.unconfined ?? false,
    );
  }

  /** The OS sandbox this machine offers, found on the configured PATH once (asked on every call). */
  #os(): OsSandboxStatus {
    return this.#osStatus ??= this.#d.osSandbox ?? detectOsSandbox(this.#d.env.PATH);
  }

  /**
   * The `dependency` question: everything that will be installed or run and what it may touch
   * (package, version, integrity, grants), asked once per install.
   */
  #dependencyRequest(meta: DependencyMeta): ApprovalRequest {
    const { what, grants } = this.#whatRuns(meta);
    const warning = unpinnedOf(meta);
    return {
      type: "dependency",
      description: (warning ? `${warning}. ` : "") +
        (meta.package ? `Install ${what} (${grants})?` : `Run ${what}? (${grants})`),
      context: {
        ...(warning ? { warning } : {}),
        server: meta.server,
        fqdn: meta.fqdn,
        package: meta.package,
        command: [meta.command, ...meta.args],
        permissions: meta.permissions,
        envRequired: meta.envRequired,
        warnings: meta.warnings,
        source: meta.source,
      },
    };
  }

  /**
   * What runs (`memory@1.0.0`, or `x with "uvx x"`) and, in words, the package, its integrity and
   * the grants it runs with.
   */
  #whatRuns(meta: DependencyMeta): { what: string; grants: string } {
    const pkg = meta.package;
    if (!pkg) {
      return {
        what: `${meta.server} with "${[meta.command, ...meta.args].join(" ")}"`,
        grants: rawCommandGrants(meta, this.#os()),
      };
    }
    return {
      what: `${meta.server}@${pkg.version}`,
      grants:
        `npm package ${pkg.name}@${pkg.version}, integrity ${pkg.integrity ?? "NOT PINNED"}; ` +
        `run under Deno with only these grants: ${describeDenoGrants(meta)}`,
    };
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
      let pending = this.#installs.get(meta.server);
      if (!pending) {
        pending = this.#install(meta, ctx).finally(() => this.#installs.delete(meta.server));
        this.#installs.set(meta.server, pending);
      }
      spec = await pending;
    } catch (err) {
      return await this.#refuse(meta, err);
    }
    this.#ready.set(meta.server, { pin: pinOf(meta), spec, meta });
    return await this.#run(meta, spec, call, ctx);
  }

  /** The launch spec of an install recorded for exactly this metadata, verified; else undefined. */
  async #recorded(meta: DependencyMeta): Promise<LaunchSpec | undefined> {
    const rec = await this.#d.state.get(meta.server);
    if (!meta.package) {
      const same = rec?.mode === "command" &&
        JSON.stringify(rec.command) === JSON.stringify([meta.command, ...meta.args]);
      return same ? commandLaunch(meta, this.#d) : undefined;
    }
    const pkg = meta.package;
    if (
      rec?.mode !== "deno" || rec.package !== pkg.name || rec.version !== pkg.version ||
      (pkg.integrity !== undefined && rec.integrity !== pkg.integrity)
    ) {
      return undefined;
    }
    const installed = await this.#d.installer.inspect(pkg, this.#dirOf(meta));
    return installed ? this.#denoSpec(meta, installed) : undefined;
  }

  async #install(
    meta: DependencyMeta,
    ctx: Pick<CallContext, "progress">,
  ): Promise<LaunchSpec> {
    const installedAt = new Date().toISOString();
    if (!meta.package) {
      await this.#d.state.record(meta.server, {
        mode: "command",
        command: [meta.command, ...meta.args],
        installedAt,
      });
      return commandLaunch(meta, this.#d);
    }
    const dir = this.#dirOf(meta);
    const installed = await this.#d.installer.install(
      meta.package,
      dir,
      async (step, total, message) => {
        await ctx.progress?.(step, total, message).catch(() => {});
      },
    );
    await this.#d.state.record(meta.server, {
      mode: "deno",
      package: meta.package.name,
      version: meta.package.version,
      integrity: installed.integrity,
      dir: relative(this.#d.workspace, dir),
      installedAt,
    });
    await this.#d.audit.write("integrity", {
      server: meta.server,
      package: meta.package.name,
      version: meta.package.version,
      integrity: installed.integrity,
      result: "verified",
    });
    return this.#denoSpec(meta, installed);
  }

  async #run(
    meta: DependencyMeta,
    spec: LaunchSpec,
    call: ToolCall,
    ctx: CallContext,
  ): Promise<CallToolResult> {
    let result: CallToolResult;
    try {
      result = await this.#d.manager.call(spec, call.toolId, call.action, call.args, {
        timeoutMs: this.#d.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
        signal: ctx.signal,
        onprogress: ctx.progress
          ? (p) => void ctx.progress!(p.progress, p.total, p.message).catch(() => {})
          : undefined,
        sample: ctx.sample
          ? (params, signal, onprogress) =>
            ctx.sample!(spec.server, params, {
              allowedToolPatterns: meta.allowedToolPatterns,
              signal,
              onprogress,
            })
          : undefined,
        verify: this.#verifier(spec.server),
      });
    } catch (err) {
      if (isPmlError(err)) return errorResult(err.message, { status: "error", code: err.code });
      const check = err instanceof ToolsChanged ? err.check : undefined;
      if (!check) throw err;
      const newTool = check.differences.some((d) =>
        d.kind === "added" && d.subject === call.action
      );
      return await askIntegrity(check, call, ctx, newTool, () => this.#run(meta, spec, call, ctx));
    }
    if (!spec.unconfined) return result;
    return {
      ...result,
      content: [{ type: "text", text: unconfinedNote(spec.unconfined) }, ...result.content],
    };
  }

  /**
   * The rug-pull guard of a running server: its own `tools/list`, hashed per tool and compared with
   * the pin (recorded on first use). Only servers whose metadata is pinned are checked.
   */
  #verifier(
    server: string,
  ): ((listTools: () => Promise<readonly Tool[]>) => Promise<void>) | undefined {
    const pins = this.#d.pins;
    if (!pins || !this.#pinnedServers.has(server)) return undefined;
    let verifier = this.#verifiers.get(server);
    if (!verifier) this.#verifiers.set(server, verifier = this.#newVerifier(pins, server));
    return verifier;
  }

  #newVerifier(
    pins: McpPins,
    server: string,
  ): (listTools: () => Promise<readonly Tool[]>) => Promise<void> {
    const name = `pml.mcp.${server}.server`;
    return async (listTools) => {
      if (!(await pins.locked(name))) return; // the metadata pin was dropped meanwhile
      const tools = await listTools();
      const check = await pins.checkTools(
        name,
        tools.map((t) => ({
          name: t.name,
          description: t.description ?? "",
          inputSchema: t.inputSchema as Record<string, unknown>,
          annotations: t.annotations as Record<string, unknown> | undefined,
        })),
      );
      if (check.kind === "changed") throw new ToolsChanged(check);
    };
  }

  async #refuse(meta: DependencyMeta, err: unknown): Promise<CallToolResult> {
    if (!isPmlError(err)) throw err;
    if (err.code === "INTEGRITY_MISMATCH") {
      this.#ready.delete(meta.server);
      await this.#d.state.forget(meta.server);
      await this.#d.audit.write("integrity", {
        server: meta.server,
        ...err.details,
        result: "refused",
      });
    }
    return errorResult(err.message, { status: "error", code: err.code, ...err.details });
  }

  #denoSpec(meta: DependencyMeta, installed: InstalledPackage): LaunchSpec {
    return denoLaunch(meta, installed, this.#d);
  }

  #dirOf(meta: DependencyMeta): string {
    if (!meta.package) throw new PmlError("METADATA_INVALID", `${meta.server} has no npm package`);
    return join(this.#d.depsDir, `${meta.server}@${meta.package.version}`);
  }
}

/** What a raw command will be able to do, for its approval question. */
function rawCommandGrants(meta: DependencyMeta, os: OsSandboxStatus): string {
  if (!os.available) return "a raw command, nothing pinned: runs UNCONFINED with your home";
  const { write, net } = meta.permissions;
  return "a raw command, nothing pinned: runs in the OS sandbox, reads the workspace" +
    (write.length ? `, writes ${write.join(", ")}` : ", writes only its own private home") +
    (net.length ? `, network to ${net.join(", ")} only (through PML's proxy)` : ", no network");
}

/** A changed tool list of a running server (caught by the target, which asks the human). */
class ToolsChanged extends Error {
  constructor(readonly check: ChangedPin) {
    super(`The tool definitions of ${check.name} changed since they were pinned`);
  }
}

/**
 * A `private_mcps` server: the user's own entry (its metadata changes are recorded, not asked; its
 * tools' definitions are pinned like any server's).
 */
function isPrivate(meta: DependencyMeta): boolean {
  return meta.source.startsWith(".pml.json");
}

function lockName(meta: DependencyMeta): string {
  return `pml.mcp.${meta.server}.server`;
}

/**
 * What `.pml/mcp.lock` pins of a stdio server: the npm package, and a canonical metadata document
 * (command, permissions, tools as listed) whose hash is the entry's `integrity`. The document is a
 * valid stdio metadata file, so the pinned version can be read back from the cache offline.
 */
export function metadataPin(meta: DependencyMeta): MetadataPin {
  const name = lockName(meta);
  return {
    fqdn: meta.fqdn.split(".").length === 5 ? meta.fqdn : name,
    type: "stdio",
    routing: "client",
    ...(meta.package ? { package: { ...meta.package } } : {}),
    document: {
      type: "stdio",
      fqdn: name,
      description: meta.description,
      install: { command: meta.command, args: meta.args, envRequired: meta.envRequired },
      ...(meta.package ? { package: meta.package } : {}),
      permissions: meta.permissions,
      tools: meta.tools.map((t) => ({
        name: `${meta.server}:${t.action}`,
        description: t.description,
        inputSchema: t.inputSchema,
      })),
      ...(meta.warnings !== undefined ? { warnings: meta.warnings } : {}),
    },
  };
}

/** The loud warning for a package without pinned integrity (private_mcps, development), if any. */
function unpinnedOf(meta: DependencyMeta): string | undefined {
  return meta.package && meta.package.integrity === undefined
    ? unpinnedWarning(meta.server, meta.package)
    : undefined;
}

function pinOf(meta: DependencyMeta): string {
  return meta.package
    ? `${meta.package.name}@${meta.package.version}#${meta.package.integrity ?? "unpinned"}`
    : JSON.stringify([meta.command, ...meta.args]);
}
