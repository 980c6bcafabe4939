import type { CallToolResult } from "../../sdk/types.ts";
import { join } from "node:path";
import type { AuditLog } from "../../audit/audit.ts";
import type { Config } from "../../config/config.ts";
import { isPmlError, PmlError } from "../../errors.ts";
import type { SandboxPool } from "../../sandbox/pool.ts";
import {
  detectOsSandbox,
  detectOsSandboxSoon,
  type OsSandboxStatus,
} from "../../sandbox/detect_os_sandbox.ts";
import { instructionWriteQuestion } from "./instruction_files.ts";
import { GuardedWrites } from "./guarded_writes.ts";
import { guardedPaths } from "../../config/control_files.ts";
import { pmlHomes, type PolicyInput, sandboxPolicy } from "../../sandbox/policy.ts";
import { SandboxError } from "../../sandbox/sandbox_process.ts";
import type { SandboxSpec } from "../../sandbox/sandbox_spec.ts";
import type { RoutingResolver } from "../../routing/routing.ts";
import { sandboxEntry } from "../../paths.ts";
import {
  type CallContext,
  errorResult,
  invalidArguments,
  permissionDenied,
  type Preflight,
  type Target,
  toCallToolResult,
  type ToolCall,
  type ToolInfo,
} from "../target.ts";
import { confinePath, type PathRoots } from "./confine.ts";
import { secretReadQuestion } from "./secret_files.ts";
import { shellCacheEnv } from "./shell_env.ts";
import { withShellHint } from "./shell_hints.ts";
import { writePreflight } from "./write_preflight.ts";
import { type Access, metaOf, STD_MODULES, type StdToolMeta } from "./std_tools.ts";

export { isStdReadTool, STD_MODULES } from "./std_tools.ts";

const ENTRY = sandboxEntry("std_entry");
const DEFAULT_TIMEOUT_MS = 120_000;
/** What a command past its own `timeout_ms` gets before its sandbox is killed. */
const SHELL_TIMEOUT_MARGIN_MS = 10_000;

/** Deno error classes that mean the sandbox refused an operation. */
const VIOLATIONS = new Set(["NotCapable", "PermissionDenied"]);

/** Processes the shell sandbox may hold while commands run: a fork bomb stops there. */
export const MAX_SHELL_PROCESSES = 256;
/** Bytes one `shell:exec` call may write to disk (MiB) before its sandbox is stopped. */
export const MAX_SHELL_WRITE_MB = 2048;

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
  readonly #detectOs: () => OsSandboxStatus;
  /**
   * What the prewarm waits for before its sandbox: the real probe, run as a process without
   * blocking; nothing for an injected detector, which `#osSandbox()` asks when the spec is made.
   */
  readonly #osProbed: () => Promise<unknown>;
  #osStatus?: OsSandboxStatus;
  readonly #guards: GuardedWrites;

  constructor(deps: {
    config: Config;
    pool: SandboxPool;
    audit: AuditLog;
    routing: RoutingResolver;
    timeoutMs?: number;
    /** Injectable for tests (default: look for bubblewrap once). */
    detectOs?: () => OsSandboxStatus;
  }) {
    this.#detectOs = deps.detectOs ?? (() => detectOsSandbox());
    this.#osProbed = deps.detectOs ? () => Promise.resolve() : detectOsSandboxSoon;
    this.#config = deps.config;
    this.#pool = deps.pool;
    this.#audit = deps.audit;
    this.#routing = deps.routing;
    this.#timeoutMs = deps.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#roots = {
      workspace: deps.config.workspace,
      read: deps.config.sandbox.read,
      write: deps.config.sandbox.write,
      hidden: [...new Set([...pmlHomes(deps.config.env), deps.config.pmlHome])],
    };
    const { workspace, sandbox } = deps.config;
    this.#guards = new GuardedWrites({
      roots: () => [workspace, ...sandbox.write],
      audit: deps.audit,
      landlock: () => {
        const os = this.#osSandbox();
        return os.available && "landlock" in os;
      },
    });
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
          annotations: { readOnlyHint: meta.access === "read" },
        });
      }
    }
    return Promise.resolve(tools);
  }

  provides(toolId: string): Promise<boolean> {
    return Promise.resolve(this.providesNow(toolId));
  }

  providesNow(toolId: string): boolean {
    const [ns, action] = toolId.split(":");
    return metaOf(ns, action) !== undefined;
  }

  /**
   * The sandbox a tool with this access runs in (exported as data for tests and `pml status`). The
   * read and write tools get the narrow view (Deno code: the workspace and grants only); `shell:exec`
   * gets the toolbox (the system, `HOME` and `PATH` read-only, minus the secrets) and writes the
   * workspace and write grants. Control and protected files stay read-only in both.
   */
  specFor(access: Access): SandboxSpec {
    const { workspace, sandbox, env, pmlHome } = this.#config;
    const base = {
      PATH: env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
      NO_COLOR: "1",
      DENO_DIR: join(pmlHome, "deno"),
    };
    const readRoots = [workspace, ...sandbox.read, ...sandbox.write];
    const writeRoots = [workspace, ...sandbox.write];
    const policy = (input: Omit<PolicyInput, "env" | "deny">) =>
      sandboxPolicy({ ...input, env, deny: sandbox.deny });
    switch (access) {
      case "read":
        return {
          entry: ENTRY,
          lean: true,
          read: readRoots,
          write: [],
          net: [],
          run: false,
          env: base,
          cwd: workspace,
          os: policy({ view: "narrow", read: readRoots }),
        };
      case "write":
        return {
          entry: ENTRY,
          lean: true,
          read: readRoots,
          write: writeRoots,
          net: [],
          run: false,
          env: base,
          cwd: workspace,
          os: policy({
            view: "narrow",
            read: readRoots,
            write: writeRoots,
            // Instruction files are written here once a human approved it.
            denyWrite: guardedPaths(writeRoots, { instructions: false }),
          }),
        };
      case "run": {
        const agent = sandbox.sshAgent ? env.SSH_AUTH_SOCK : undefined;
        return {
          entry: ENTRY,
          lean: true,
          read: [workspace],
          write: [],
          net: [],
          run: true,
          env: {
            ...base,
            HOME: env.HOME ?? workspace,
            LANG: env.LANG ?? "C.UTF-8",
            // HOME is read-only: caches (package managers' too) go to the sandbox's private /tmp.
            ...shellCacheEnv({ netGranted: sandbox.net.length > 0 }),
            ...(agent ? { SSH_AUTH_SOCK: agent } : {}),
          },
          cwd: workspace,
          // The programs the shell runs see the machine as a toolbox minus its secrets, write the
          // workspace and grants minus control and protected files, reach the hosts `sandbox.net`
          // grants through the proxy and nothing else, and have their own pid namespace (children
          // die with the sandbox).
          os: policy({
            view: "toolbox",
            read: sandbox.read,
            write: writeRoots,
            denyWrite: guardedPaths(writeRoots),
            sockets: agent ? [agent] : [],
            net: sandbox.net,
          }),
          maxProcesses: MAX_SHELL_PROCESSES,
          maxWriteMb: MAX_SHELL_WRITE_MB,
        };
      }
    }
  }

  /**
   * Probes for the OS sandbox ahead of the first call (a process start; the gateway calls this
   * after its first `tools/list`). The read sandbox itself (~40 MB) starts with the first call of a
   * std tool, so that a gateway used only for cloud tools never holds one.
   */
  probeOs(): void {
    this.#osProbed().catch(() => {
      // The gateway closed first: the first call probes again.
    });
  }

  /** A std write's question: where its symlinked paths lead, an instruction file's question. */
  preflight(call: ToolCall): Promise<Preflight | undefined> {
    const meta = metaOf(call.ns, call.action);
    if (!meta || meta.access !== "write") return Promise.resolve(undefined);
    return Promise.resolve(writePreflight(call, meta.paths, this.#roots));
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
        return permissionDenied(err.message);
      } else if (isPmlError(err, "CONTROL_FILE")) {
        await this.#audit.write("control_file_blocked", { tool: call.toolId, ...err.details });
        return permissionDenied(err.message);
      } else if (isPmlError(err, "PROTECTED_FILE")) {
        await this.#audit.write("protected_file_blocked", { tool: call.toolId, ...err.details });
        return permissionDenied(err.message);
      }
      if (err instanceof TypeError) return invalidArguments(call.toolId, err.message);
      return errorResult(err instanceof Error ? err.message : String(err));
    }
    // A write to an instruction file, a read of a `.env` file: the human's question first.
    const instruction = instructionWriteQuestion(call.toolId, call.args, this.#roots);
    const secret = secretReadQuestion(call.toolId, args, call.args, this.#config.workspace);
    const asked = instruction
      ? {
        question: instruction,
        file: String(instruction.context.instruction_file),
        what: "writing the instruction file",
      }
      : secret
      ? { question: secret, file: String(secret.context.secret_file), what: "reading" }
      : undefined;
    if (asked) {
      return await ctx.ask(asked.question, async (decision, by) => {
        if (decision !== "no") return await this.#run(call, meta, args, ctx);
        await this.#audit.write("permission_denied", { tool: call.toolId, by, file: asked.file });
        return errorResult(`Permission denied: ${asked.what} "${asked.file}" was refused`);
      });
    }
    return await this.#run(call, meta, args, ctx);
  }

  /** Runs a confined (and, for a `.env` read, approved) call in its sandbox. */
  async #run(
    call: ToolCall,
    meta: StdToolMeta,
    args: Record<string, unknown>,
    ctx: CallContext,
  ): Promise<CallToolResult> {
    let unconfinedNote = "";
    if (meta.access === "run") {
      const os = this.#osSandbox();
      if (!os.available) {
        if (!this.#config.sandbox.unconfined) {
          await this.#audit.write("sandbox_violation", {
            tool: call.toolId,
            message: `refused: no OS sandbox (${os.reason})`,
          });
          return errorResult(
            `"${call.toolId}" was refused: it runs programs, and this machine has no OS sandbox to ` +
              `confine them to the workspace: ${os.reason}. Install it, or accept running ` +
              `unconfined with "sandbox": {"unconfined": true} in .pml.json.`,
          );
        }
        unconfinedNote =
          `[pml: ran UNCONFINED (${os.reason}); ".pml.json" sandbox.unconfined is set]\n`;
      }
    }
    if (meta.access !== "read") {
      // `.pml/` must exist to be bound read-only into the sandbox.
      await Deno.mkdir(join(this.#config.workspace, ".pml"), { recursive: true }).catch(() => {});
    }
    const before = this.#guards.before(meta, args);
    const proc = this.#pool.get(this.specFor(meta.access));
    const refusedMark = proc.refusedMark;
    try {
      const value = await proc.call(
        { ns: call.ns, action: call.action, args, workspace: this.#config.workspace },
        // No `onMcp`: the std modules make no nested calls, so no line on their channel can ask
        // the gateway for one.
        // The client's cancellation reaches the module as `ctx.signal` (`shell:exec` kills its
        // command); the other calls of the sandbox go on.
        { timeoutMs: this.#hostTimeoutMs(meta.access, args), signal: ctx.signal },
      ).finally(async () => {
        // What the command detached from its group (`setsid`) ends with the command too.
        if (meta.access === "run") await proc.killStrays();
      });
      const created = await this.#guards.after(call.toolId, before);
      const result = toCallToolResult(
        meta.access === "run"
          ? withShellHint(value, proc.refusedSince(refusedMark), this.#config)
          : value,
      );
      if (!unconfinedNote && !created) return result;
      return {
        ...result,
        content: [{ type: "text", text: unconfinedNote + created }, ...result.content],
      };
    } catch (err) {
      if (err instanceof SandboxError && VIOLATIONS.has(err.name)) {
        await this.#audit.write("sandbox_violation", { tool: call.toolId, message: err.message });
        return errorResult(`"${call.toolId}" was refused by the sandbox: ${err.message}`);
      }
      // The std modules check their arguments and throw a TypeError naming the bad one.
      if (err instanceof SandboxError && err.name === "TypeError") {
        return invalidArguments(call.toolId, err.message);
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

  /**
   * How long the host waits before it kills the sandbox: a `shell:exec` command ends itself at its
   * `timeout_ms` (up to 10 minutes), so the host waits that long plus a margin.
   */
  #hostTimeoutMs(access: Access, args: Record<string, unknown>): number {
    const asked = args.timeout_ms;
    // An invalid one is refused by the module itself, at once.
    if (access !== "run" || typeof asked !== "number" || !(asked > 0 && asked <= 600_000)) {
      return this.#timeoutMs;
    }
    return Math.max(this.#timeoutMs, asked + SHELL_TIMEOUT_MARGIN_MS);
  }

  #osSandbox(): OsSandboxStatus {
    return this.#osStatus ??= this.#detectOs();
  }
}
