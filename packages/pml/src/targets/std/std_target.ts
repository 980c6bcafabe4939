import type { CallToolResult } from "../../sdk/types.ts";
import { join } from "node:path";
import * as filesystem from "../../../../../registry/std/filesystem.ts";
import * as shell from "../../../../../registry/std/shell.ts";
import type { AuditLog } from "../../audit/audit.ts";
import type { Config } from "../../config/config.ts";
import { isPmlError, PmlError } from "../../errors.ts";
import type { SandboxPool } from "../../sandbox/pool.ts";
import { SandboxError, type SandboxSpec } from "../../sandbox/sandbox_process.ts";
import type { RoutingResolver } from "../../routing/routing.ts";
import {
  type CallContext,
  errorResult,
  type Target,
  toCallToolResult,
  type ToolCall,
  type ToolInfo,
} from "../target.ts";
import { confinePath, type PathRoots } from "./confine.ts";

type Access = "read" | "write" | "run";
interface StdToolMeta {
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly paths: readonly string[];
  readonly access: Access;
}

/** The built-in std modules, by namespace (the same files the registry serves). */
export const STD_MODULES = { filesystem, shell } as const;

const ENTRY = join(import.meta.dirname!, "..", "..", "sandbox", "std_entry.ts");
const DEFAULT_TIMEOUT_MS = 120_000;

/** Deno error classes that mean the sandbox refused an operation. */
const VIOLATIONS = new Set(["NotCapable", "PermissionDenied"]);

function metaOf(ns: string, action: string): StdToolMeta | undefined {
  const mod = STD_MODULES[ns as keyof typeof STD_MODULES];
  return (mod?.__meta__.tools as Record<string, StdToolMeta> | undefined)?.[action];
}

/**
 * Runs the built-in tools (`filesystem`, `shell`) in warm sandbox subprocesses. Path arguments are
 * confined to the workspace (real paths, symlinks resolved) before dispatch; the sandbox's Deno
 * flags grant only what the tool's access needs.
 */
export class StdTarget implements Target {
  readonly name = "std";
  readonly #config: Config;
  readonly #pool: SandboxPool;
  readonly #audit: AuditLog;
  readonly #routing: RoutingResolver;
  readonly #roots: PathRoots;
  readonly #timeoutMs: number;

  constructor(deps: {
    config: Config;
    pool: SandboxPool;
    audit: AuditLog;
    routing: RoutingResolver;
    timeoutMs?: number;
  }) {
    this.#config = deps.config;
    this.#pool = deps.pool;
    this.#audit = deps.audit;
    this.#routing = deps.routing;
    this.#timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#roots = {
      workspace: deps.config.workspace,
      read: deps.config.sandbox.read,
      write: deps.config.sandbox.write,
    };
  }

  listTools(namespaces?: ReadonlySet<string>): Promise<ToolInfo[]> {
    const tools: ToolInfo[] = [];
    for (const [ns, mod] of Object.entries(STD_MODULES)) {
      if (namespaces && !namespaces.has(ns)) continue;
      for (
        const [action, meta] of Object.entries(mod.__meta__.tools as Record<string, StdToolMeta>)
      ) {
        const id = `${ns}:${action}`;
        tools.push({
          id,
          description: meta.description,
          inputSchema: meta.inputSchema,
          routing: this.#routing.routeOf(id),
        });
      }
    }
    return Promise.resolve(tools);
  }

  provides(toolId: string): Promise<boolean> {
    const [ns, action] = toolId.split(":");
    return Promise.resolve(metaOf(ns, action) !== undefined);
  }

  /** The sandbox a tool with this access runs in (exported as data for tests and `pml status`). */
  specFor(access: Access): SandboxSpec {
    const { workspace, sandbox, env, pmlHome } = this.#config;
    const base = {
      PATH: env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      NO_COLOR: "1",
      DENO_DIR: join(pmlHome, "deno"),
    };
    const readRoots = [workspace, ...sandbox.read, ...sandbox.write];
    switch (access) {
      case "read":
        return {
          entry: ENTRY,
          read: readRoots,
          write: [],
          net: [],
          run: false,
          env: base,
          cwd: workspace,
        };
      case "write":
        return {
          entry: ENTRY,
          read: readRoots,
          write: [workspace, ...sandbox.write],
          net: [],
          run: false,
          env: base,
          cwd: workspace,
        };
      case "run":
        return {
          entry: ENTRY,
          read: [workspace],
          write: [],
          net: [],
          run: true,
          env: { ...base, HOME: env.HOME ?? workspace, LANG: env.LANG ?? "C.UTF-8" },
          cwd: workspace,
        };
    }
  }

  /** Starts the sandbox of read-only tools ahead of the first call. */
  prewarm(): void {
    this.#pool.get(this.specFor("read"));
  }

  async call(call: ToolCall, ctx: CallContext): Promise<CallToolResult> {
    const meta = metaOf(call.ns, call.action);
    if (!meta) return errorResult(`Unknown tool "${call.toolId}"`);
    const args = { ...call.args };
    try {
      for (const name of meta.paths) {
        if (args[name] === undefined) continue;
        args[name] = confinePath(
          args[name],
          meta.access === "read" ? "read" : "write",
          this.#roots,
        );
      }
    } catch (err) {
      if (isPmlError(err, "PATH_OUTSIDE_WORKSPACE")) {
        await this.#audit.write("path_blocked", { tool: call.toolId, ...err.details });
      } else if (isPmlError(err, "CONTROL_FILE")) {
        await this.#audit.write("control_file_blocked", { tool: call.toolId, ...err.details });
      }
      return errorResult(err instanceof Error ? err.message : String(err));
    }
    const proc = this.#pool.get(this.specFor(meta.access));
    try {
      const value = await proc.call(
        { ns: call.ns, action: call.action, args, workspace: this.#config.workspace },
        { timeoutMs: this.#timeoutMs, onMcp: ctx.callTool },
      );
      return toCallToolResult(value);
    } catch (err) {
      if (err instanceof SandboxError && VIOLATIONS.has(err.name)) {
        await this.#audit.write("sandbox_violation", { tool: call.toolId, message: err.message });
        return errorResult(`"${call.toolId}" was refused by the sandbox: ${err.message}`);
      }
      if (err instanceof SandboxError || err instanceof PmlError) {
        return errorResult(`"${call.toolId}" failed: ${err.message}`);
      }
      throw err;
    }
  }

  async close(): Promise<void> {
    // The pool is shared and closed by its owner (the gateway).
  }
}
