import type { CallToolResult } from "../../sdk/types.ts";
import { basename, join, resolve } from "node:path";
import * as filesystem from "../../../../../registry/std/filesystem.ts";
import * as shell from "../../../../../registry/std/shell.ts";
import type { AuditLog } from "../../audit/audit.ts";
import type { Config } from "../../config/config.ts";
import { isPmlError, PmlError } from "../../errors.ts";
import type { SandboxPool } from "../../sandbox/pool.ts";
import {
  detectOsSandbox,
  detectOsSandboxSoon,
  type OsSandboxStatus,
} from "../../sandbox/os_sandbox.ts";
import { guardedPathHit, guardedPaths, scanOf } from "../../config/control_files.ts";
import { restoreGatedParts, type ScriptsPart, scriptsParts } from "../../config/package_scripts.ts";
import { instructionWriteQuestion } from "./instruction_files.ts";
import { missingGuarded, settleCreatedGuarded } from "./created_guarded.ts";
import { type GuardedSnapshot, restoreGuarded, snapshotGuarded } from "./kept_guarded.ts";
import { pmlHomes, type PolicyInput, sandboxPolicy } from "../../sandbox/policy.ts";
import { SandboxError, type SandboxSpec } from "../../sandbox/sandbox_process.ts";
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
import { confinePath, type PathRoots, realPathForAccess } from "./confine.ts";
import { secretReadQuestion } from "./secret_files.ts";
import { shellCacheEnv } from "./shell_env.ts";
import { shellHint } from "./shell_hints.ts";

type Access = "read" | "write" | "run";

/** What a writing call is compared against after it (`StdTarget.#beforeWrites`). */
interface BeforeWrites {
  /** A shell command's guarded paths, from a walk of its folders at most a second old. */
  readonly guarded: readonly string[];
  /** Those that did not exist. */
  readonly missing: readonly string[];
  /** When the command started (ms). */
  readonly at: number;
  /** The scripts of the `package.json` files the call may change. */
  readonly scripts: ReadonlyMap<string, ScriptsPart | undefined>;
}
interface StdToolMeta {
  readonly description: string;
  readonly inputSchema: Record<string, unknown>;
  readonly paths: readonly string[];
  readonly access: Access;
}

/** The built-in std modules, by namespace (the same files the registry serves). */
export const STD_MODULES = { filesystem, shell } as const;

const ENTRY = sandboxEntry("std_entry");
const DEFAULT_TIMEOUT_MS = 120_000;
/** What a command past its own `timeout_ms` gets before its sandbox is killed. */
const SHELL_TIMEOUT_MARGIN_MS = 10_000;

/** Deno error classes that mean the sandbox refused an operation. */
const VIOLATIONS = new Set(["NotCapable", "PermissionDenied"]);

function metaOf(ns: string, action: string): StdToolMeta | undefined {
  const mod = STD_MODULES[ns as keyof typeof STD_MODULES];
  return (mod?.__meta__.tools as Record<string, StdToolMeta> | undefined)?.[action];
}

/**
 * True for a std tool that only reads (`access: "read"`): it changes nothing, so `pml:execute` may
 * start its calls ahead of the code (`execute/read_ahead.ts`). The gateway asks the std target
 * first, so a tool id of a std namespace is always this tool.
 */
export function isStdReadTool(toolId: string): boolean {
  const [ns, action] = toolId.split(":");
  return metaOf(ns, action)?.access === "read";
}

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

  /**
   * What the question about a std write should also say: where each path argument that goes
   * through a symlink really leads (`notes.txt` → `.git/config`), so the human approves the file
   * that would change, not the name the agent gave it.
   */
  preflight(call: ToolCall): Promise<Preflight | undefined> {
    const meta = metaOf(call.ns, call.action);
    if (!meta || meta.access !== "write") return Promise.resolve(undefined);
    const resolved: Record<string, string> = {};
    for (const name of meta.paths) {
      const given = call.args[name];
      if (typeof given !== "string" || given === "" || given.includes("\0")) continue;
      const absolute = resolve(this.#config.workspace, given);
      let real: string;
      try {
        real = realPathForAccess(absolute);
      } catch {
        continue; // a dangling link: the call itself is refused with why
      }
      if (real !== absolute) resolved[given] = real;
    }
    const entries = Object.entries(resolved);
    // A write to an instruction file: this question is the human's, shows the new content on
    // the human's page, and covers the one the call itself would ask.
    const instruction = instructionWriteQuestion(call.toolId, call.args, this.#roots);
    if (entries.length === 0 && !instruction) return Promise.resolve(undefined);
    const said = entries.map(([given, real]) => `"${given}" resolves to "${real}".`);
    return Promise.resolve({
      description: [...said, ...(instruction ? [instruction.description] : [])].join(" "),
      context: { ...(entries.length ? { resolved } : {}), ...instruction?.context },
      ...(instruction ? { covers: instruction, forHuman: instruction.forHuman } : {}),
    });
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

  /**
   * A `shell:exec` outcome with a `hint` when its command met the sandbox's walls: which grant of
   * `.pml.json` would allow it (`shell_hints.ts`).
   */
  #withHint(value: unknown, refusedHosts: string[]): unknown {
    const out = value as { stdout?: unknown; stderr?: unknown } | null;
    if (typeof out?.stdout !== "string" || typeof out.stderr !== "string") return value;
    const { workspace, sandbox } = this.#config;
    const hint = shellHint({
      stdout: out.stdout,
      stderr: out.stderr,
      refusedHosts,
      net: sandbox.net,
      workspace,
      write: sandbox.write,
    });
    return hint ? { ...out, hint } : value;
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
    const before = this.#beforeWrites(meta, args);
    // Behind Landlock the existing ones cannot be bound read-only: kept, and put back after.
    const kept = meta.access === "run" ? this.#keptGuardedFiles() : undefined;
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
      const created = await this.#settleCreatedGuardedFiles(call.toolId, before) +
        (kept ? await this.#restoreGuardedFiles(call.toolId, kept) : "");
      const result = toCallToolResult(
        meta.access === "run" ? this.#withHint(value, proc.refusedSince(refusedMark)) : value,
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

  /** Behind the Landlock wall: the guarded files that exist, as they are now. */
  #keptGuardedFiles(): GuardedSnapshot | undefined {
    const os = this.#osSandbox();
    if (!os.available || !("landlock" in os)) return undefined;
    const { workspace, sandbox } = this.#config;
    const roots = [workspace, ...sandbox.write];
    return snapshotGuarded(guardedPaths(roots), roots);
  }

  /** Puts back the guarded files a command changed (Landlock), audits it, says so. */
  async #restoreGuardedFiles(toolId: string, kept: GuardedSnapshot): Promise<string> {
    const restored = restoreGuarded(kept);
    const { workspace, sandbox } = this.#config;
    for (const path of restored) {
      const hit = guardedPathHit(path, [workspace, ...sandbox.write]);
      await this.#audit.write(
        hit?.kind === "control" ? "control_file_blocked" : "protected_file_blocked",
        { tool: toolId, path, action: "changed by the command; restored" },
      );
    }
    return restored.length
      ? `[pml: restored ${restored.map((p) => `"${p}"`).join(", ")}: control files and files ` +
        `your tools run later are not for tools to change]\n`
      : "";
  }

  /**
   * What a writing call is compared against after it: for a shell command, the guarded files (a
   * fresh walk of the write roots) and which of them did not exist yet (a bind cannot protect
   * them, so they are watched), and the scripts of every `package.json`; for a write tool, the
   * scripts of a `package.json` it names.
   */
  #beforeWrites(meta: StdToolMeta, args: Record<string, unknown>): BeforeWrites {
    if (meta.access === "read") return { guarded: [], missing: [], scripts: new Map(), at: 0 };
    if (meta.access === "write") {
      const named = meta.paths.map((name) => args[name])
        .filter((p): p is string => typeof p === "string" && basename(p) === "package.json");
      return { guarded: [], missing: [], scripts: scriptsParts(named), at: 0 };
    }
    const roots = this.#writeRoots();
    // The walk the call's policy uses (at most a second old): what it missed and the command left
    // alone is told apart after it by its change time.
    const at = Date.now();
    const guarded = guardedPaths(roots);
    const packages = roots.flatMap((root) => scanOf(root).packageJsons);
    return { guarded, missing: missingGuarded(guarded), scripts: scriptsParts(packages), at };
  }

  #writeRoots(): string[] {
    const { workspace, sandbox } = this.#config;
    return [workspace, ...sandbox.write];
  }

  /**
   * Removes the control and protected files a shell command created where none existed (the OS
   * sandbox binds only existing ones read-only; a new repository's checked config and hooks stay),
   * audits it and says so. Returns the note for the result, or "".
   */
  async #settleCreatedGuardedFiles(toolId: string, before: BeforeWrites): Promise<string> {
    const roots = this.#writeRoots();
    let wereMissing = before.missing;
    let packages: string[] = [];
    if (before.guarded.length) {
      // What the command made of its folders: new git dirs, gitfiles, instruction files.
      const known = new Set(before.guarded);
      const now = guardedPaths(roots, { fresh: true });
      const made = now.filter((path) => !known.has(path) && changedSince(path, before.at));
      wereMissing = [...before.missing, ...made];
      packages = roots.flatMap((root) => scanOf(root).packageJsons);
    }
    const settled = await settleCreatedGuarded(wereMissing);
    const removed = settled.filter((s) => s.outcome === "removed");
    for (const { path, why } of removed) {
      const hit = guardedPathHit(path, roots);
      await this.#audit.write(
        hit?.kind === "control" ? "control_file_blocked" : "protected_file_blocked",
        { tool: toolId, path, action: `created by the command; removed${why ? ` (${why})` : ""}` },
      );
    }
    const restored = restoreGatedParts(before.scripts, packages);
    for (const { path, keys } of restored) {
      await this.#audit.write("protected_file_blocked", {
        tool: toolId,
        path,
        action: `changed ${keys.join(", ")}; put back`,
      });
    }
    const notes: string[] = [];
    if (removed.length) {
      notes.push(
        `[pml: removed ${
          removed.map((r) => `"${r.path}"${r.why ? ` (${r.why})` : ""}`).join(", ")
        }: control files, files your tools run later (git config, hooks and git dirs, shell rc ` +
          `files, package manager, editor and agent settings) and instruction files are not for ` +
          `tools to create]\n`,
      );
    }
    if (restored.length) {
      notes.push(
        `[pml: put back ${
          restored.map((r) => `${r.keys.map((k) => `"${k}"`).join(", ")} of "${r.path}"`).join("; ")
        }: scripts the host runs without being named (install and prepare scripts, pre/post ` +
          `hooks, packageManager) are the human's to change; the rest of the file is as written]\n`,
      );
    }
    return notes.join("");
  }
}

/**
 * Whether the entry `path` was created or changed at or after `at` (ms), by its change time (which
 * no program can set back, unlike its modification time; kept in whole seconds here, so the second
 * of `at` counts). A missing entry counts: nothing to keep.
 */
function changedSince(path: string, at: number): boolean {
  try {
    const ctime = Deno.lstatSync(path).ctime?.getTime();
    return ctime === undefined || ctime >= Math.floor(at / 1000) * 1000;
  } catch {
    return true;
  }
}
