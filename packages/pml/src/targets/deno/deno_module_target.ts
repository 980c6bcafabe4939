/**
 * `DenoModuleTarget` (DESIGN §8): runs deno modules from the registries (and `private_mcps`) in a
 * sandbox subprocess with no read, write or run grant and no environment, with code generation
 * from strings disabled; network only to the hosts `.pml.json` grants it ({@link moduleNet}). Before that: the loader's integrity, lockfile and import
 * checks; an `integrity` approval when a locked hash changed; and the capability's approval mode
 * from the tools it calls (`inferCapabilityApprovalMode`). Nested `mcp.*` calls go back through
 * the gateway (`ctx.callTool`).
 *
 * @module
 */
import { dirname, join } from "node:path";
import type { AuditLog } from "../../audit/audit.ts";
import type { Config } from "../../config/config.ts";
import { errorMessage, isPmlError, PmlError } from "../../errors.ts";
import {
  checkPermission,
  inferCapabilityApprovalMode,
  type Permissions,
} from "../../permission/patterns.ts";
import type { LoadedModule } from "../../registry/loader.ts";
import { codeIntegrityRequest } from "../../registry/integrity_request.ts";
import { isUnreachable } from "../../registry/registry_client.ts";
import type { RoutingResolver } from "../../routing/routing.ts";
import type { SandboxPool } from "../../sandbox/pool.ts";
import { sandboxPolicy } from "../../sandbox/policy.ts";
import { SandboxError, type SandboxProcess } from "../../sandbox/sandbox_process.ts";
import type { SandboxSpec } from "../../sandbox/sandbox_spec.ts";
import { type CallToolResult, CreateMessageRequestSchema } from "../../sdk/types.ts";
import { refusalText } from "./_refusal.ts";
import {
  type CallContext,
  errorResult,
  type Preflight,
  type Target,
  toCallToolResult,
  type ToolCall,
  type ToolInfo,
} from "../target.ts";
import { createRegistryStack, type RegistryStack } from "./_stack.ts";
import { listRegistryTools } from "./_listing.ts";
import { runFiles, syncRunFiles } from "./run_files.ts";

/** Dependencies of {@link DenoModuleTarget}. */
export interface DenoModuleTargetDeps {
  readonly config: Config;
  readonly pool: SandboxPool;
  readonly audit: AuditLog;
  readonly routing: RoutingResolver;
  /** The live permissions (they change with "always"). */
  readonly permissions: () => Permissions;
  /** HTTP for the registries (default: the real `fetch`). */
  readonly fetch?: typeof fetch;
  /** Per registry request (default 10 s). */
  readonly registryTimeoutMs?: number;
  /** Per tool call in the sandbox (default 30 s; the sandbox is killed past it). */
  readonly timeoutMs?: number;
  /** Warnings and debug lines (default: stderr). */
  readonly warn?: (line: string) => void;
  readonly now?: () => number;
  /** The session's registry pieces, when shared with other targets (default: built here). */
  readonly stack?: RegistryStack;
}

/** Deno error classes that mean the sandbox refused an operation. */
const VIOLATIONS = new Set(["NotCapable", "PermissionDenied", "EvalError"]);

/** See the module documentation. */
export class DenoModuleTarget implements Target {
  readonly name = "deno";
  readonly stack: RegistryStack;
  readonly #d: DenoModuleTargetDeps;
  readonly #runRoot: string;
  readonly #procs = new Map<string, SandboxProcess>();
  readonly #known = new Map<string, { found: boolean; until: number }>();

  constructor(deps: DenoModuleTargetDeps) {
    this.#d = deps;
    this.stack = deps.stack ?? createRegistryStack(deps);
    this.#runRoot = join(deps.config.pmlHome, "registry", "run");
  }

  listTools(namespaces?: ReadonlySet<string>): Promise<ToolInfo[]> {
    return listRegistryTools(this.stack, this.#d, namespaces);
  }

  async provides(toolId: string): Promise<boolean> {
    const [ns, action] = toolId.split(":");
    const priv = await this.stack.privateMcps.denoSource(ns).catch(() => undefined);
    if (priv) return !action.startsWith("_") && action !== "__meta__";
    if (this.#d.config.privateMcps[ns]) return false;
    // Platform server tools (json, math, text, …) run on the server, never from registry code here.
    if (this.#d.routing.routeOf(toolId) === "server") return false;
    const now = (this.#d.now ?? Date.now)();
    const known = this.#known.get(toolId);
    if (known && known.until > now) return known.found;
    let found: boolean;
    try {
      const lock = await this.stack.lockfile();
      found = lock.entries().some(([name, e]) => e.type === "deno" && toolOf(name) === toolId) ||
        (await this.stack.client.findTool(toolId)) !== undefined;
    } catch (err) {
      // Registry unreachable or lockfile corrupt: nobody can tell whether the tool exists. Say why
      // (the gateway answers with it before any permission question) rather than claim it.
      const why = isUnreachable(err)
        ? `it is not in the local cache and the registry is unreachable (${errorMessage(err)})`
        : errorMessage(err);
      throw new PmlError(
        isPmlError(err) ? err.code : "REGISTRY_UNREACHABLE",
        `Cannot tell whether "${toolId}" exists: ${why}`,
        { cause: err },
      );
    }
    this.#known.set(toolId, { found, until: now + (found ? 3_600_000 : 60_000) });
    return found;
  }

  async call(call: ToolCall, ctx: CallContext): Promise<CallToolResult> {
    let outcome;
    try {
      outcome = await this.stack.loader.load(call.toolId);
    } catch (err) {
      const message = errorMessage(err);
      // Loader errors already name the tool; say it once.
      const prefix = `Cannot load "${call.toolId}"`;
      return errorResult(
        message.startsWith(prefix) ? message : `${prefix}: ${message}`,
        codeOf(err),
      );
    }
    if (outcome.kind === "ready") return await this.#withApprovalMode(call, ctx, outcome.module);
    const changes = outcome.changes;
    return await ctx.ask(
      codeIntegrityRequest(call.toolId, changes),
      async (decision) => {
        if (decision === "no") {
          await this.stack.loader.refuse(call.toolId, changes);
          return errorResult(
            `Integrity check failed for "${call.toolId}": the new code was refused and not run; the lockfile keeps ${
              changes.map((c) => `${c.name} ${c.old.integrity}`).join(", ")
            }`,
            { status: "error", code: "INTEGRITY_REFUSED" },
          );
        }
        return await this.#withApprovalMode(call, ctx, await outcome.accept());
      },
    );
  }

  /**
   * For the question about an `ask` tool: the network hosts the module will reach, when
   * `.pml.json` grants any (the module is loaded for its declaration only then).
   */
  async preflight(call: ToolCall): Promise<Preflight | undefined> {
    const own = this.#privateNet(call.ns);
    if (this.#d.config.sandbox.net.length === 0 && own.length === 0) return undefined;
    const outcome = await this.stack.loader.load(call.toolId);
    if (outcome.kind !== "ready") return undefined;
    const net = moduleNet(outcome.module, this.#d.config.sandbox.net, own);
    if (net.length === 0) return undefined;
    return {
      description: `It runs with network access to ${net.join(", ")} only.`,
      context: { grants: { net } },
    };
  }

  /** `private_mcps.<ns>.permissions.net` of a private deno MCP: the user's own grant. */
  #privateNet(ns: string): readonly string[] {
    const def = Object.hasOwn(this.#d.config.privateMcps, ns)
      ? this.#d.config.privateMcps[ns]
      : undefined;
    return def?.type === "deno" ? def.permissions?.net ?? [] : [];
  }

  async #withApprovalMode(
    call: ToolCall,
    ctx: CallContext,
    module: LoadedModule,
  ): Promise<CallToolResult> {
    const perms = this.#d.permissions();
    const toolsUsed = [...new Set([module, ...allDeps(module)].flatMap((m) => m.scan.toolsUsed))]
      .sort();
    const mode = inferCapabilityApprovalMode(toolsUsed, perms);
    if (mode === "blocked") {
      const denied = toolsUsed.filter((t) => checkPermission(t, perms) === "deny");
      await this.#d.audit.write("permission_denied", {
        tool: call.toolId,
        reason: "capability_uses_denied_tool",
        denied,
      });
      return errorResult(
        `Permission denied: "${call.toolId}" calls ${
          denied.map((t) => `"${t}"`).join(", ")
        }, denied by .pml.json permissions`,
      );
    }
    // "ask" once for the capability, unless the gateway has just asked for this very tool.
    if (mode === "ask" && checkPermission(call.toolId, perms) !== "ask") {
      return await ctx.ask(
        {
          type: "tool_permission",
          description: `Run "${call.toolId}" (${module.fqdn})? It calls ${toolsUsed.join(", ")}`,
          context: { tool: call.toolId, fqdn: module.fqdn, tools_used: toolsUsed },
        },
        async (decision) => {
          if (decision !== "no") return await this.#run(call, ctx, module);
          await this.#d.audit.write("permission_denied", { tool: call.toolId, by: "user" });
          return errorResult(`Permission denied: the user refused "${call.toolId}"`);
        },
      );
    }
    return await this.#run(call, ctx, module);
  }

  async #run(call: ToolCall, ctx: CallContext, module: LoadedModule): Promise<CallToolResult> {
    const { dir, files } = runFiles(this.#runRoot, module, call.ns);
    const changed = await syncRunFiles(dir, files);
    if (changed.length) {
      await this.#d.audit.write("integrity", {
        tool: call.toolId,
        event: "run_files_restored",
        dir,
        files: changed,
      });
      (this.#d.warn ?? console.error)(
        `pml: warning: run files of "${call.toolId}" had changed on disk; restored from the verified cache`,
      );
    }
    const own = module.source === "private" ? this.#privateNet(call.ns) : [];
    const net = moduleNet(module, this.#d.config.sandbox.net, own);
    const proc = this.#d.pool.get(this.specFor(join(dir, "entry.ts"), net));
    const previous = this.#procs.get(call.toolId);
    if (previous && previous !== proc && previous.inFlight === 0) previous.close();
    this.#procs.set(call.toolId, proc);
    try {
      const value = await proc.call(
        { ns: call.ns, action: call.action, args: call.args, workspace: "" },
        {
          timeoutMs: this.#d.timeoutMs ?? 30_000,
          onMcp: ctx.callTool,
          onSample: ctx.sample ? (params) => sampleFor(module, call.ns, params, ctx) : undefined,
          // A module that honours `ctx.signal` ends a cancelled call; one that ignores it runs
          // on to its end or its timeout.
          signal: ctx.signal,
        },
      );
      return toCallToolResult(value);
    } catch (err) {
      const violation = err instanceof SandboxError && VIOLATIONS.has(err.name);
      const timeout = err instanceof PmlError && err.code === "SANDBOX_TIMEOUT";
      if (violation || timeout) {
        await this.#d.audit.write("sandbox_violation", {
          tool: call.toolId,
          fqdn: module.fqdn,
          reason: timeout ? "timeout" : err.name,
          message: (err as Error).message,
        });
      }
      if (violation) {
        const why = refusalText(
          (err as Error).message,
          { source: module.source, ns: call.ns },
          net,
        );
        return errorResult(`"${call.toolId}" was refused by the sandbox: ${why}`);
      }
      if (err instanceof SandboxError || err instanceof PmlError) {
        return errorResult(`"${call.toolId}" failed: ${err.message}`);
      }
      throw err;
    }
  }

  /**
   * The sandbox of a registry module, as data: no file grants, no environment but Deno's cache dir,
   * and `net` (host or host:port) only: the OS sandbox then reaches those hosts through the
   * host-side proxy (`sandbox/net_proxy.ts`), and Deno's `--allow-net` narrows `fetch` to them too.
   */
  specFor(entry: string, net: readonly string[] = []): SandboxSpec {
    return {
      entry,
      read: [],
      write: [],
      net,
      run: false,
      env: {
        DENO_DIR: join(this.#d.config.pmlHome, "deno"),
        NO_COLOR: "1",
        DENO_V8_FLAGS: "--disallow-code-generation-from-strings",
      },
      cwd: "/",
      // The OS wall: the module's run folder and Deno's cache (its pinned npm imports), read-only.
      os: sandboxPolicy({
        view: "narrow",
        env: this.#d.config.env,
        deny: this.#d.config.sandbox.deny,
        read: [dirname(entry), join(this.#d.config.pmlHome, "deno")],
        net,
      }),
    };
  }

  async close(): Promise<void> {
    // Processes belong to the shared pool, closed by the gateway.
  }
}

/**
 * The hosts a module may reach (docs/permissions.md, "Network grants"): those its `__meta__`
 * declares (`permissions.net`, pinned with its code) that `.pml.json` `sandbox.net` grants, plus,
 * for a private MCP, its own `private_mcps.<ns>.permissions.net`. Registry code never grants
 * itself network: a declaration alone gives nothing.
 *
 * @example
 * ```ts
 * moduleNet(module, ["127.0.0.1:8080"], []); // ["127.0.0.1:8080"] if the module declares it
 * ```
 */
export function moduleNet(
  module: LoadedModule,
  granted: readonly string[],
  own: readonly string[],
): string[] {
  const perms = (module.scan.meta?.permissions ?? {}) as { net?: unknown };
  const declared = Array.isArray(perms.net)
    ? perms.net.filter((h): h is string => typeof h === "string")
    : [];
  return [...new Set([...own, ...declared.filter((h) => granted.includes(h))])];
}

/**
 * A module's `ctx.createMessage(params)`: checked as an MCP `sampling/createMessage` request, then
 * answered as a sampling request of its namespace, with the tools its `__meta__` names in
 * `allowedToolPatterns`.
 */
async function sampleFor(
  module: LoadedModule,
  ns: string,
  params: unknown,
  ctx: CallContext,
): Promise<unknown> {
  const parsed = CreateMessageRequestSchema.safeParse({ method: "sampling/createMessage", params });
  if (!parsed.success) {
    throw new PmlError(
      "SAMPLING_INVALID",
      `ctx.createMessage of "${ns}": not a valid sampling/createMessage request: ${
        parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")
      }`,
    );
  }
  const patterns = (module.scan.meta as { allowedToolPatterns?: unknown } | undefined)
    ?.allowedToolPatterns;
  return await ctx.sample!(ns, parsed.data.params, {
    allowedToolPatterns: Array.isArray(patterns)
      ? patterns.filter((p): p is string => typeof p === "string")
      : [],
  });
}

function toolOf(name: string): string {
  const parts = name.split(".");
  return `${parts[2]}:${parts[3]}`;
}

function allDeps(m: LoadedModule): LoadedModule[] {
  return m.deps.flatMap((d) => [d.module, ...allDeps(d.module)]);
}

function codeOf(err: unknown): Record<string, unknown> | undefined {
  return err instanceof PmlError
    ? { status: "error", code: err.code, message: err.message }
    : undefined;
}
