/**
 * One sandbox subprocess and the host's side of its protocol (`protocol.ts`): calls in flight,
 * their timeouts and cancellation, the nested calls and read-ahead outcomes relayed for them
 * (`call_relay.ts`), the line framing of its stdin/stdout, its stderr kept for a crash's reason,
 * and how it is stopped. How it is started (wall, environment, proxy, control group) is
 * `_spawn.ts`; the limits watched while it runs, `_watchdogs.ts`.
 *
 * @module
 */
import { PmlError } from "../errors.ts";
import { forEachLine } from "./_lines.ts";
import { printable } from "./printable.ts";
import { StderrTail } from "./_stderr_tail.ts";
import type { HostMessage, SandboxMessage, WireError } from "./protocol.ts";
import { killTree, killWithChildren } from "../procfs.ts";
import type { OsSandboxStatus } from "./detect_os_sandbox.ts";
import { straysOf } from "./sandbox_tree.ts";
import type { SandboxSpec } from "./sandbox_spec.ts";
import { type SandboxWall, spawnSandbox } from "./_spawn.ts";
import { watchLimits } from "./_watchdogs.ts";
import {
  type AheadCalls,
  AheadRelay,
  answerNested,
  type McpHandler,
  type SampleHandler,
} from "./call_relay.ts";

/** How many refused destinations a sandbox keeps for its results' hints. */
const MAX_REFUSED = 100;

/** Error thrown inside the sandbox, carried back with its class name. */
export class SandboxError extends Error {
  constructor(readonly wire: WireError) {
    super(wire.message);
    this.name = wire.name;
  }
}

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
  /** The OS wall it runs inside, if any (see {@link SandboxWall}). */
  readonly #confined: SandboxWall | undefined;
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
    const spawned = spawnSandbox(spec, {
      denoPath: opts.denoPath,
      osSandbox: opts.osSandbox,
      onRefused: (destination) => {
        this.#refused.push(destination);
        if (this.#refused.length > MAX_REFUSED) this.#refused.shift(), this.#refusedDropped++;
      },
    });
    this.#child = spawned.child;
    this.#confined = spawned.wall;
    this.#writer = this.#child.stdin.getWriter();
    let markReady!: () => void;
    this.ready = new Promise((r) => (markReady = r));
    this.#readStdout(markReady);
    const onStderr = opts.onStderr ??
      ((line: string) => console.error(`[sandbox] ${printable(line)}`));
    const tail = new StderrTail();
    const stderrRead = this.#readStderr((line) => (tail.push(line), onStderr(line)));
    const limits = {
      maxRssMb: spec.maxRssMb,
      maxProcesses: spec.maxProcesses,
      maxWriteMb: spawned.maxWriteMb,
    };
    const stopWatching = watchLimits(this.#child.pid, limits, {
      landlock: this.#confined === "landlock",
      busy: () => this.#pending.size > 0,
      stop: (reason) => {
        this.#exitReason = reason;
        this.kill();
      },
    });
    this.exited = this.#child.status.then(async (status) => {
      // What Deno said before it died (its last lines may still be in the pipe); a stray that
      // keeps stderr open does not hold the answer back.
      if (!status.success && !this.#exitReason) await settledWithin(stderrRead, 500);
      await spawned.cleanUp();
      stopWatching();
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
  get wall(): SandboxWall | undefined {
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
      const relay = opts.ahead &&
        new AheadRelay(
          id,
          opts.ahead,
          (line) => this.#write(line),
          () => this.#alive && this.#pending.has(id),
        );
      const pending: Pending = {
        resolve,
        reject,
        onMcp: opts.onMcp,
        onSample: opts.onSample,
        onAhead: relay && ((index) => relay.take(index)),
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
      relay?.start();
    });
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
      answerNested(msg, this.#pending.get(msg.callId), (m) => this.#send(m));
      return;
    }
    if (msg.t === "mcp_ahead") this.#pending.get(msg.callId)?.onAhead?.(msg.index);
  }
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
