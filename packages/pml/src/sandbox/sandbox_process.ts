import { PmlError } from "../errors.ts";
import { forEachLine } from "./_lines.ts";
import { printable } from "./printable.ts";
import { StderrTail } from "./_stderr_tail.ts";
import type { HostMessage, SandboxMessage, WireError } from "./protocol.ts";
import { descendantCount, killTree, killWithChildren, taskChildren } from "../procfs.ts";
import { unixSocketFilterFile } from "./seccomp.ts";
import { libcPath } from "./libc.ts";
import {
  CHANNEL_IN_FD,
  CHANNEL_OUT_FD,
  detectOsSandbox,
  type OsPolicy,
  type OsSandboxStatus,
  SANDBOX_CACHE_HOME,
  SANDBOX_DENO_DIR,
  SANDBOX_HOME,
  wallCommand,
} from "./os_sandbox.ts";
import { denoProcessUnder, rssKb, straysOf } from "./sandbox_tree.ts";
import { NetProxy } from "./net_proxy.ts";
import { HTTP_PROXY_ENV, PROXY_ENV, proxyEnvOnPorts } from "./net_bridge.ts";
import { createGroup, joinThenRun } from "./cgroup.ts";
import { diskBytesUnder } from "./_disk_writes.ts";

/** How many refused destinations a sandbox keeps for its results' hints. */
const MAX_REFUSED = 100;

/** What a sandbox may do, as data: the Deno flags are derived from it and nothing else. */
export interface SandboxSpec {
  /** Entry module (absolute path) that calls `serveModules`. */
  readonly entry: string;
  readonly read: readonly string[];
  readonly write: readonly string[];
  readonly net: readonly string[];
  /** Unscoped `--allow-run` (only `shell:exec`). */
  readonly run: boolean;
  /** The only environment the process gets (no API keys). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Heap limit in MiB. */
  readonly maxHeapMb?: number;
  /**
   * A long-lived host of PML's own tool modules (the std tools), not of agent code: it runs
   * without V8's optimizing compilers (its work is file and process I/O; their code and zones
   * were ~7 MB of its resident memory) and collects its garbage once idle (`--expose-gc`).
   */
  readonly lean?: boolean;
  /**
   * Resident memory limit in MiB, array buffers included (V8's heap limit does not count them):
   * a watchdog reads the process's RSS every 100 ms and kills it above this.
   */
  readonly maxRssMb?: number;
  /**
   * Most processes the sandbox may hold while a call runs (a fork bomb): counted every 100 ms
   * under the sandbox's own process, which is killed above it.
   */
  readonly maxProcesses?: number;
  /**
   * Most bytes the sandbox may write to disk during one call (a disk filler), in MiB: counted
   * with the processes, every 100 ms; the sandbox is killed above it.
   */
  readonly maxWriteMb?: number;
  /**
   * The OS wall (bubblewrap) around the process, when the machine has one; without one the
   * process runs with its Deno flags only (the caller decides whether that is acceptable).
   */
  readonly os?: OsPolicy;
}

/**
 * V8 flags of a std tool sandbox: Ignition and Sparkplug only, no Maglev or TurboFan (their code
 * and compile zones cost resident memory for no gain on file and process I/O glue), and `gc` for
 * its idle collection. The gateway keeps its optimizing tiers (without them its per-call overhead
 * on `read_file` went from ~20 µs to ~250 µs in `deno task bench stdio`) and only exposes `gc`.
 */
export const LEAN_V8_FLAGS = "--no-opt,--no-maglev,--expose-gc";

/**
 * Deno flags for a spec: least privilege, no prompts, no config or lockfile from the workspace.
 * `channel`: the runner talks over descriptors 3 and 4 and seals itself with `prctl` through
 * the C library at `libc` (see `_runner.ts`), which these flags then let it open, and nothing else.
 */
export function sandboxFlags(spec: SandboxSpec, channel?: { libc: string }): string[] {
  if (channel) {
    const flags = sandboxFlags({
      ...spec,
      read: [...spec.read, `/proc/self/fd/${CHANNEL_IN_FD}`],
      write: [...spec.write, `/proc/self/fd/${CHANNEL_OUT_FD}`],
    });
    flags.splice(flags.length - 1, 0, `--allow-ffi=${channel.libc}`);
    return [...flags, `--pml-channel=${channel.libc}`];
  }
  for (const p of [...spec.read, ...spec.write]) {
    if (p.includes(",")) {
      throw new PmlError("SANDBOX_SPEC", `Cannot grant "${p}": path contains a comma`);
    }
  }
  const flags = ["run", "--no-prompt", "--no-config", "--no-lock", "--no-remote", "--quiet"];
  flags.push(
    `--v8-flags=--max-old-space-size=${spec.maxHeapMb ?? 256},--max-semi-space-size=1,` +
      `--optimize-for-size${spec.lean ? `,${LEAN_V8_FLAGS}` : ""}`,
  );
  if (spec.read.length) flags.push(`--allow-read=${spec.read.join(",")}`);
  if (spec.write.length) flags.push(`--allow-write=${spec.write.join(",")}`);
  if (spec.net.length) flags.push(`--allow-net=${spec.net.join(",")}`);
  if (spec.run) flags.push("--allow-run");
  flags.push(spec.entry);
  return flags;
}

/** Handles a nested `mcp.ns.action()` call made by sandboxed code. */
export type McpHandler = (tool: string, args: unknown) => Promise<unknown>;
/** Answers a module's `ctx.createMessage(params)` (params as the module sent them, unchecked). */
export type SampleHandler = (params: unknown) => Promise<unknown>;

/** Error thrown inside the sandbox, carried back with its class name. */
export class SandboxError extends Error {
  constructor(readonly wire: WireError) {
    super(wire.message);
    this.name = wire.name;
  }
}

/**
 * Calls the host started before the module asked for them (`execute/read_ahead.ts`): their keys,
 * their outcomes (a value, or an error sent as the module's `mcp` call would get it), and what to
 * do when the module makes call `index` (at most once each).
 */
export interface AheadCalls {
  readonly keys: readonly string[];
  readonly outcomes: readonly Promise<unknown>[];
  readonly onTaken: (index: number) => void;
}

/** Outcomes of calls started ahead up to this length (their JSON line) go before the code asks. */
export const AHEAD_PUSH_CHARS = 256 * 1024;

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  onMcp?: McpHandler;
  onSample?: SampleHandler;
  onAhead?: AheadCalls["onTaken"];
  timer?: ReturnType<typeof setTimeout>;
}

const encoder = new TextEncoder();

/**
 * One sandbox subprocess (`deno run` with the spec's flags), serving many concurrent calls over
 * its stdin/stdout. Killed with SIGKILL on timeout or close; a crash fails the calls in flight.
 */
export class SandboxProcess {
  readonly spec: SandboxSpec;
  #child: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  /** Lines written in this turn, not yet handed to {@link SandboxProcess.#writer}. */
  #outgoing: string[] = [];
  #pending = new Map<number, Pending>();
  #nextId = 1;
  #alive = true;
  /** Destinations its network proxy refused (`host:port`), the latest {@link MAX_REFUSED}. */
  readonly #refused: string[] = [];
  #refusedDropped = 0;
  #exitReason = "";
  /** Replaced in its pool: it ends when its last call in flight does. */
  #retiring = false;
  /**
   * Runs inside an OS wall: bubblewrap (its pid namespace lets strays be found and killed) or
   * Landlock (its init is the subreaper of what commands detach).
   */
  readonly #confined: "bubblewrap" | "landlock" | "seatbelt" | undefined;
  readonly ready: Promise<void>;
  readonly exited: Promise<void>;

  constructor(
    spec: SandboxSpec,
    opts: {
      denoPath?: string;
      onStderr?: (line: string) => void;
      /** Injectable for tests; detected once per process by default. */
      osSandbox?: OsSandboxStatus;
    } = {},
  ) {
    this.spec = spec;
    const deno = opts.denoPath ?? Deno.execPath();
    const os = spec.os ? (opts.osSandbox ?? detectOsSandbox()) : undefined;
    const confined = spec.os && os?.available ? { policy: spec.os, wall: os } : undefined;
    const landlock = confined !== undefined && "landlock" in confined.wall;
    const seatbelt = confined !== undefined && "seatbelt" in confined.wall;
    this.#confined = confined &&
      (landlock ? "landlock" : seatbelt ? "seatbelt" : "bubblewrap");
    // Behind Landlock or Seatbelt nothing is mounted: the sandbox's home, temp folder and Deno
    // cache are a private folder of the host's (by its real path: Seatbelt matches real paths),
    // removed when it ends.
    const own = landlock || seatbelt
      ? Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-sandbox-" }))
      : undefined;
    if (own) { for (const sub of ["home", "tmp", "deno"]) Deno.mkdirSync(`${own}/${sub}`); }
    // Deno's update check is a network lookup; a sandbox has no business with the network.
    const env: Record<string, string> = { ...spec.env, DENO_NO_UPDATE_CHECK: "1" };
    if (confined) {
      // Deno's cache is private, unless the spec's is bound in (registry modules need their
      // cached npm imports). The home is the user's where the policy shows it (the toolbox of
      // `shell:exec`: `~/.gitconfig`, toolchains), else an empty private one.
      if (!env.DENO_DIR || !spec.os!.read.includes(env.DENO_DIR)) {
        env.DENO_DIR = own ? `${own}/deno` : SANDBOX_DENO_DIR;
      }
      env.TMPDIR = own ? `${own}/tmp` : "/tmp";
      // Paths the spec puts under the sandbox's /tmp (the caches of `shell:exec`) are in its
      // private temp folder behind Landlock, where /tmp is the host's.
      if (own) {
        // Only those: the user's HOME or PATH may lie under the host's /tmp too.
        for (const [k, v] of Object.entries(env)) {
          if (v === SANDBOX_CACHE_HOME || v.startsWith(`${SANDBOX_CACHE_HOME}/`)) env[k] = own + v;
        }
      }
      if (env.HOME !== undefined && !spec.os!.read.includes(env.HOME)) {
        env.HOME = own ? `${own}/home` : SANDBOX_HOME;
      }
    }
    // Without the OS wall, a sandbox meant to have one and given no Deno cache would use the
    // user's (its `location_data` holds `localStorage` and the Cache API): a private one instead,
    // removed when the process ends.
    const privateDenoDir = !confined && spec.os && env.DENO_DIR === undefined
      ? Deno.makeTempDirSync({ prefix: "pml-sandbox-deno-" })
      : undefined;
    if (privateDenoDir) env.DENO_DIR = privateDenoDir;
    // Granted hosts are reached through a proxy of this process, the only way out of the
    // sandbox's network namespace (without the OS wall, Deno's --allow-net alone holds).
    const proxy = confined && confined.policy.net.length > 0
      ? new NetProxy(confined.policy.net, {
        tcp: landlock || seatbelt,
        onEvent: (e) => {
          if (e.allowed) return;
          this.#refused.push(`${e.host}:${e.port}`);
          if (this.#refused.length > MAX_REFUSED) this.#refused.shift(), this.#refusedDropped++;
        },
      })
      : undefined;
    // Programs a shell starts get SOCKS5 too; Deno code only HTTP(S) (see HTTP_PROXY_ENV).
    if (proxy) Object.assign(env, spec.run ? PROXY_ENV : HTTP_PROXY_ENV);
    // Behind Seatbelt: straight to the proxy's loopback ports (no bridge, no launcher to do it).
    if (seatbelt && proxy?.ports) Object.assign(env, proxyEnvOnPorts(env, proxy.ports));
    // A sandbox that runs programs keeps its protocol out of their reach (`SandboxChannel`):
    // through `/proc`, which macOS does not have (nor `prctl`, which seals the runner).
    const libc = confined && spec.run && !seatbelt ? libcPath() : undefined;
    const started = confined
      ? wallCommand(
        confined.wall,
        confined.policy,
        spec.cwd,
        [deno, ...sandboxFlags(spec, libc ? { libc } : undefined)],
        {
          denoPath: deno,
          channel: libc ? "fds" : "stdio",
          seccomp: seatbelt ? undefined : unixSocketFilterFile(),
          netDir: proxy?.dir,
          privateDir: own,
          proxyPorts: proxy?.ports,
        },
      )
      : { program: deno, args: sandboxFlags(spec) };
    // Tasks and memory of the whole sandbox in a control group, where `pml` may create one (the
    // only process cap the kernel applies when `pml` runs as root).
    const limits = confined?.policy.limits;
    const group = limits && createGroup({ tasks: limits.tasks, memoryMb: limits.memoryMb });
    const [program, ...args] = group
      ? joinThenRun(group, [started.program, ...started.args])
      : [started.program, ...started.args];
    this.#child = new Deno.Command(program, {
      args,
      cwd: spec.cwd,
      clearEnv: true,
      env,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    let markReady!: () => void;
    this.ready = new Promise((r) => (markReady = r));
    this.#readStdout(markReady);
    const onStderr = opts.onStderr ??
      ((line: string) => console.error(`[sandbox] ${printable(line)}`));
    const tail = new StderrTail();
    const stderrRead = this.#readStderr((line) => (tail.push(line), onStderr(line)));
    const watchdog = spec.maxRssMb ? this.#watchMemory(spec.maxRssMb) : undefined;
    // Behind Landlock its temp folder and Deno cache (the Cache API, `localStorage`) are on the
    // host's disk, not a sized tmpfs: what one call writes is capped at that size instead.
    const maxWriteMb = spec.maxWriteMb ??
      (landlock ? confined!.policy.limits.tmpMb + confined!.policy.limits.shmMb : undefined);
    const pidWatch = spec.maxProcesses || maxWriteMb
      ? this.#watchProcesses(spec.maxProcesses ?? Infinity, maxWriteMb ?? Infinity)
      : undefined;
    this.exited = this.#child.status.then(async (status) => {
      // What Deno said before it died (its last lines may still be in the pipe); a stray that
      // keeps stderr open does not hold the answer back.
      if (!status.success && !this.#exitReason) await settledWithin(stderrRead, 500);
      proxy?.close();
      await group?.remove();
      for (const dir of [privateDenoDir, own]) {
        if (!dir) continue;
        try {
          Deno.removeSync(dir, { recursive: true });
        } catch { /* already gone */ }
      }
      clearInterval(watchdog);
      clearInterval(pidWatch);
      this.#alive = false;
      const why = this.#exitReason ||
        `the sandbox process exited (code ${status.code}${
          status.signal ? `, ${status.signal}` : ""
        })${tail.reason() ? `: ${tail.reason()}` : ""}`;
      markReady();
      for (const [id, p] of this.#pending) {
        clearTimeout(p.timer);
        p.reject(new PmlError("SANDBOX_CRASHED", `Tool call failed: ${why}`));
        this.#pending.delete(id);
      }
    });
  }

  /** The OS wall it runs behind, if any. */
  get wall(): "bubblewrap" | "landlock" | "seatbelt" | undefined {
    return this.#confined;
  }

  /** Process id (for tests that count processes). */
  get pid(): number {
    return this.#child.pid;
  }

  get alive(): boolean {
    return this.#alive;
  }

  /** Number of calls in flight. */
  get inFlight(): number {
    return this.#pending.size;
  }

  /**
   * Runs `ns.action(args)` in the sandbox. A call that exceeds `timeoutMs` kills the process (a
   * busy loop cannot be interrupted otherwise) and fails with `SANDBOX_TIMEOUT`. When `signal`
   * aborts (the client cancelled the call), the runner is sent `cancel` for it: the module's
   * `ctx.signal` aborts, the other calls of the sandbox go on, and the call settles with what the
   * module answers then (`timeoutMs` still bounds a module that ignores it).
   */
  call(
    req: { ns: string; action: string; args: unknown; workspace: string },
    opts: {
      timeoutMs?: number;
      onMcp?: McpHandler;
      onSample?: SampleHandler;
      ahead?: AheadCalls;
      signal?: AbortSignal;
    } = {},
  ): Promise<unknown> {
    if (!this.#alive) {
      return Promise.reject(
        new PmlError("SANDBOX_CRASHED", "Tool call failed: sandbox is not running"),
      );
    }
    const id = this.#nextId++;
    const signal = opts.signal;
    return new Promise((resolved, rejected) => {
      let resolve = resolved;
      let reject = rejected;
      if (signal) {
        const onAbort = () => {
          if (this.#alive && this.#pending.has(id)) this.#send({ t: "cancel", id });
        };
        // No options object: Deno converts one on every call; the call's end removes it.
        signal.addEventListener("abort", onAbort);
        const off = () => signal.removeEventListener("abort", onAbort);
        resolve = (value) => (off(), resolved(value));
        reject = (err) => (off(), rejected(err));
      }
      // Outcomes go to the sandbox as they come, except large ones, held until the code takes
      // them: a read the code does not end up making costs the sandbox at most AHEAD_PUSH_CHARS.
      const taken = new Set<number>();
      const held = new Map<number, string>();
      const onAhead = opts.ahead && ((index: number) => {
        if (taken.has(index)) return;
        taken.add(index);
        const line = held.get(index);
        if (line !== undefined) {
          held.delete(index);
          this.#write(line);
        }
        opts.ahead!.onTaken(index);
      });
      const pending: Pending = {
        resolve,
        reject,
        onMcp: opts.onMcp,
        onSample: opts.onSample,
        onAhead,
      };
      if (opts.timeoutMs) {
        pending.timer = setTimeout(() => {
          this.#exitReason = `"${req.ns}:${req.action}" timed out after ${opts.timeoutMs} ms`;
          this.#pending.delete(id);
          reject(
            new PmlError(
              "SANDBOX_TIMEOUT",
              `Tool "${req.ns}:${req.action}" timed out after ${opts.timeoutMs} ms; its sandbox was killed`,
            ),
          );
          this.kill();
        }, opts.timeoutMs);
      }
      this.#pending.set(id, pending);
      this.#send({
        t: "call",
        id,
        ns: req.ns,
        action: req.action,
        args: req.args,
        ctx: { workspace: req.workspace },
        ...(opts.ahead?.keys.length ? { ahead: [...opts.ahead.keys] } : {}),
      });
      if (signal?.aborted) this.#send({ t: "cancel", id });
      opts.ahead?.outcomes.forEach((outcome, index) => {
        const answer = (msg: HostMessage) => {
          if (!this.#alive || !this.#pending.has(id)) return;
          const line = JSON.stringify(msg) + "\n";
          if (line.length <= AHEAD_PUSH_CHARS || taken.has(index)) this.#write(line);
          else held.set(index, line);
        };
        outcome.then(
          (value) =>
            answer({ t: "ahead_result", callId: id, index, ok: true, value: value ?? null }),
          (err) =>
            answer({ t: "ahead_result", callId: id, index, ok: false, error: wireError(err) }),
        );
      });
    });
  }

  /**
   * Kills the process when its resident memory passes `limitMb`. The measured process is the Deno
   * one: the child itself, or inside bubblewrap the Deno process under it (found once it exists).
   */
  #watchMemory(limitMb: number): ReturnType<typeof setInterval> {
    let target: number | undefined;
    const timer = setInterval(() => {
      target ??= denoProcessUnder(this.#child.pid, this.#confined === "landlock");
      if (target === undefined) return;
      const kb = rssKb(target);
      if (kb !== undefined && kb > limitMb * 1024) {
        this.#exitReason = `the sandbox used ${
          Math.round(kb / 1024)
        } MiB of memory (limit ${limitMb} MiB) and was stopped`;
        this.kill();
      }
    }, 100);
    Deno.unrefTimer(timer);
    return timer;
  }

  /**
   * Kills the sandbox when, during a call, more than `limit` processes run under it, or more
   * than `writeMb` MiB were written to disk since the call started.
   */
  #watchProcesses(limit: number, writeMb: number): ReturnType<typeof setInterval> {
    let before: number | undefined;
    const timer = setInterval(() => {
      if (this.#pending.size === 0) {
        before = undefined; // idle: nothing of a command can run
        return;
      }
      const count = limit === Infinity ? 0 : descendantCount(this.#child.pid);
      if (count > limit) {
        this.#exitReason =
          `the sandbox ran more than ${limit} processes (${count}) and was stopped`;
        this.kill();
        return;
      }
      if (writeMb === Infinity) return;
      const written = diskBytesUnder(this.#child.pid, taskChildren);
      before ??= written;
      if (written - before > writeMb * 1024 * 1024) {
        this.#exitReason = `the sandbox wrote more than ${writeMb} MiB to disk in one call (${
          Math.round((written - before) / 1024 / 1024)
        } MiB) and was stopped`;
        this.kill();
      }
    }, 100);
    Deno.unrefTimer(timer);
    return timer;
  }

  /** A mark of the refusals so far, for {@link refusedSince} after a call. */
  get refusedMark(): number {
    return this.#refusedDropped + this.#refused.length;
  }

  /**
   * The destinations (`host:port`) its network proxy refused since `mark`: what a command of
   * `shell:exec` tried to reach that `sandbox.net` does not grant (the result's hint names them).
   */
  refusedSince(mark: number): string[] {
    return this.#refused.slice(Math.max(0, mark - this.#refusedDropped));
  }

  /**
   * Kills every process of the sandbox that is neither the runner nor below it: what a command
   * detached from its process group (`setsid`, a double fork whose parent ended) is re-parented to
   * the sandbox's init and would otherwise live until the sandbox ends. Called after each
   * `shell:exec` command; the commands still running stay below the runner and are left alone.
   * Returns how many processes were killed; inside bubblewrap only (0 otherwise). When strays keep
   * appearing (a detached fork loop), the whole sandbox is stopped.
   */
  async killStrays(): Promise<number> {
    if (!this.#confined || !this.#alive) return 0;
    let killed = 0;
    for (let round = 0; round < 50; round++) {
      const strays = straysOf(this.#child.pid, this.#confined === "landlock");
      if (strays.length === 0) return killed;
      for (const pid of strays) {
        try {
          Deno.kill(pid, "SIGKILL");
          killed++;
        } catch { /* already gone */ }
      }
      // Let the kills land (the sandbox's init reaps them) before looking again.
      await new Promise((r) => setTimeout(r, round < 5 ? 1 : 10));
    }
    this.#exitReason = "processes a command detached kept starting others; the sandbox was stopped";
    await this.close();
    return killed;
  }

  /** Ends the process once no call is in flight (at once when none is). */
  closeWhenIdle(): void {
    this.#retiring = true;
    if (this.#pending.size === 0) void this.close();
  }

  /** Kills the process (SIGKILL), and inside bubblewrap the sandbox's init with it. Calls in flight fail. */
  kill(): void {
    if (!this.#alive) return;
    this.#alive = false;
    if (this.#confined === "landlock") {
      // No pid namespace: every process below the init (the subreaper of what commands detach).
      killTree(this.#child.pid);
      return;
    }
    if (this.#confined) {
      killWithChildren(this.#child.pid);
      return;
    }
    try {
      this.#child.kill("SIGKILL");
    } catch { /* already gone */ }
  }

  /** Kills the process and waits for it to be reaped. */
  async close(): Promise<void> {
    this.#exitReason ||= "the gateway is shutting down";
    this.kill();
    await this.exited;
  }

  /**
   * Writes an empty line (the runner skips it). A process idle for a while takes ~0.5 ms to wake
   * on this kind of VM; poking it while the host still prepares the call overlaps that wake-up.
   */
  poke(): void {
    if (this.#alive) this.#write("\n");
  }

  #send(message: HostMessage): void {
    this.#write(JSON.stringify(message) + "\n");
  }

  /**
   * Queues `line`; the lines queued in one turn go out in one write, at the end of that turn (a
   * microtask). The child's stdin is a stream that writes one chunk at a time, the next only once
   * the event loop has seen the last one done: the three reads `pml:execute` starts ahead reached
   * the std sandbox ~0.5 ms apart (and the code, queued behind the poke, reached its sandbox late).
   */
  #write(line: string): void {
    if (this.#outgoing.push(line) === 1) queueMicrotask(this.#flush);
  }

  #flush = (): void => {
    const text = this.#outgoing.length === 1 ? this.#outgoing[0] : this.#outgoing.join("");
    this.#outgoing = [];
    this.#writer.write(encoder.encode(text)).catch(() => {});
  };

  #readStdout(markReady: () => void): Promise<void> {
    return forEachLine(this.#child.stdout, (line) => {
      let msg: SandboxMessage;
      try {
        msg = JSON.parse(line);
      } catch {
        return;
      }
      if (msg.t === "ready") markReady();
      else this.#onMessage(msg);
    });
  }

  #readStderr(onLine: (line: string) => void): Promise<void> {
    return forEachLine(this.#child.stderr, (line) => {
      if (line.trim()) onLine(line);
    });
  }

  #onMessage(msg: Exclude<SandboxMessage, { t: "ready" }>): void {
    if (msg.t === "result") {
      const p = this.#pending.get(msg.id);
      if (!p) return;
      this.#pending.delete(msg.id);
      clearTimeout(p.timer);
      if (msg.ok) p.resolve(msg.value);
      else p.reject(new SandboxError(msg.error));
      if (this.#retiring && this.#pending.size === 0) {
        // After the caller's own follow-up (a shell call kills its strays first) has run.
        setTimeout(() => void this.close(), 0);
      }
      return;
    }
    if (msg.t === "mcp" || msg.t === "sample") {
      const p = this.#pending.get(msg.callId);
      const reply = (ok: boolean, valueOrError: unknown) =>
        this.#send(
          ok
            ? { t: "mcp_result", id: msg.id, ok: true, value: valueOrError }
            : { t: "mcp_result", id: msg.id, ok: false, error: valueOrError as WireError },
        );
      const run = msg.t === "mcp"
        ? p?.onMcp && (() => p.onMcp!(msg.tool, msg.args))
        : p?.onSample && (() => p.onSample!(msg.params));
      if (!run) {
        const what = msg.t === "mcp" ? `mcp.${msg.tool}` : "Sampling (ctx.createMessage)";
        reply(false, { name: "Error", message: `${what} is not available here` });
        return;
      }
      run().then(
        (value) => reply(true, value ?? null),
        (err) => reply(false, wireError(err)),
      );
      return;
    }
    if (msg.t === "mcp_ahead") this.#pending.get(msg.callId)?.onAhead?.(msg.index);
  }
}

/** An error of the host's side of an `mcp` call, as the module gets it. */
function wireError(err: unknown): WireError {
  return {
    name: "Error",
    message: err instanceof Error ? err.message : String(err),
    code: (err as { code?: string } | undefined)?.code,
  };
}

/** Waits for `p` to settle, at most `ms` milliseconds. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    p.catch(() => {}),
    new Promise((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
}
