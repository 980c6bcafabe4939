import type { CallToolResult, Tool } from "../../sdk/types.ts";
import type { LaunchSpec } from "../../deps/launch.ts";
import { PmlError } from "../../errors.ts";
import { type Clock, realClock, sleep } from "./clock.ts";
import type { PidFile } from "./pid_file.ts";
import { type ServerCallOptions, ServerProcess } from "./server_process.ts";
import type { UpstreamSession } from "../upstream/upstream_session.ts";
import type { UpstreamHub } from "../upstream/upstream_hub.ts";

/** Supervision settings; defaults in {@link DEFAULT_SUPERVISION}. */
export interface Supervision {
  /** Stop a server after this long without calls (DESIGN §8: 5 minutes). */
  readonly idleMs: number;
  readonly startTimeoutMs: number;
  /** Consecutive crashes after which restarts stop for `cooldownMs`. */
  readonly maxCrashes: number;
  /** Wait before restart n (after n crashes): `backoffMs * 2^(n-1)`, at most `maxBackoffMs`. */
  readonly backoffMs: number;
  readonly maxBackoffMs: number;
  readonly cooldownMs: number;
}

export const DEFAULT_SUPERVISION: Supervision = {
  idleMs: 5 * 60 * 1000,
  startTimeoutMs: 30_000,
  maxCrashes: 3,
  backoffMs: 250,
  maxBackoffMs: 5_000,
  cooldownMs: 60_000,
};

interface Slot {
  proc?: ServerProcess;
  starting?: Promise<ServerProcess>;
  key?: string;
  /** Armed while the process may be idle; re-armed when it fires early (see `#touch`). */
  idleTimer?: unknown;
  /** When a call last started or ended ({@link Clock.now}). */
  lastUsed: number;
  crashes: number;
  lastCrashAt: number;
  lastCrash: string;
}

/**
 * One process per stdio server (DESIGN §8): started on the first call, shared by concurrent calls,
 * stopped after `idleMs` without calls and restarted transparently on the next one. A crash fails the
 * calls in flight; the next call restarts the server after a growing backoff, and after `maxCrashes`
 * consecutive crashes calls fail with a clear error until `cooldownMs` has passed. `close()` kills
 * every process group; the pid file lets the next `pml` reap what a killed one left.
 */
export class StdioProcessManager {
  readonly #slots = new Map<string, Slot>();
  readonly #clock: Clock;
  readonly #sup: Supervision;
  readonly #pids?: PidFile;
  readonly #reaped: Promise<unknown>;
  readonly #onStderr?: (server: string, line: string) => void;
  readonly #hub?: UpstreamHub;
  #closed = false;

  constructor(
    opts: {
      clock?: Clock;
      supervision?: Partial<Supervision>;
      pids?: PidFile;
      onStderr?: (server: string, line: string) => void;
      hub?: UpstreamHub;
    } = {},
  ) {
    this.#clock = opts.clock ?? realClock;
    this.#sup = { ...DEFAULT_SUPERVISION, ...opts.supervision };
    this.#pids = opts.pids;
    this.#onStderr = opts.onStderr;
    this.#hub = opts.hub;
    this.#reaped = this.#pids?.reapOrphans().catch(() => []) ?? Promise.resolve();
  }

  /** Pid of the running process of `server`, if any (for tests and status). */
  pidOf(server: string): number | undefined {
    const proc = this.#slots.get(server)?.proc;
    return proc?.alive ? proc.pid : undefined;
  }

  /** Runs `action` on the server described by `spec`, starting (or restarting) it if needed. */
  async call(
    spec: LaunchSpec,
    toolId: string,
    action: string,
    args: Record<string, unknown>,
    opts: ServerCallOptions,
  ): Promise<CallToolResult> {
    const slot = this.#slot(spec.server);
    try {
      return await this.#callOnce(slot, spec, toolId, action, args, opts);
    } catch (err) {
      // The process had died before the request reached it (killed between calls, exit not yet
      // seen): nothing ran, so one retry on a fresh process is safe.
      if (!(err instanceof PmlError && err.code === "DEPENDENCY_GONE")) throw err;
      return await this.#callOnce(slot, spec, toolId, action, args, opts);
    }
  }

  async #callOnce(
    slot: Slot,
    spec: LaunchSpec,
    toolId: string,
    action: string,
    args: Record<string, unknown>,
    opts: ServerCallOptions,
  ): Promise<CallToolResult> {
    // A running process of this launch is taken without a turn of the event loop.
    const proc = slot.proc?.alive && slot.key === launchKey(spec)
      ? slot.proc
      : await this.#acquire(slot, spec);
    this.#touch(slot);
    try {
      const verifying = opts.verify && proc.verifyOnce(opts.verify, opts.timeoutMs);
      if (verifying) await verifying;
      const result = await proc.call(toolId, action, args, opts);
      slot.crashes = 0;
      return result;
    } catch (err) {
      if (err instanceof PmlError && err.code === "DEPENDENCY_GONE" && slot.proc === proc) {
        slot.proc = undefined; // do not hand the dead process to the retry
      }
      throw err;
    } finally {
      if (slot.proc === proc) this.#touch(slot);
    }
  }

  /**
   * The server's own `tools/list` (started if needed; it then stays up like after a call, until
   * idle). `verify` runs first, as before a call.
   */
  async listTools(
    spec: LaunchSpec,
    opts: Pick<ServerCallOptions, "timeoutMs" | "verify">,
  ): Promise<readonly Tool[]> {
    const slot = this.#slot(spec.server);
    const proc = await this.#acquire(slot, spec);
    this.#disarm(slot); // a list counts no call in flight: no stop while it runs
    try {
      if (opts.verify) await proc.verifyOnce(opts.verify, opts.timeoutMs);
      return await proc.listTools(opts.timeoutMs);
    } finally {
      if (slot.proc === proc) this.#touch(slot);
    }
  }

  /**
   * The session of the server's process (started if needed; it then stays up like after a call,
   * until idle): for the requests beyond tools (resources, prompts, completions).
   */
  async session(spec: LaunchSpec): Promise<UpstreamSession> {
    const slot = this.#slot(spec.server);
    const proc = await this.#acquire(slot, spec);
    this.#touch(slot);
    return proc.session;
  }

  /** Stops `server` if it runs. */
  async stop(server: string): Promise<void> {
    const slot = this.#slots.get(server);
    const proc = slot?.proc;
    if (!slot || !proc) return;
    slot.proc = undefined;
    this.#disarm(slot);
    await proc.stop();
  }

  /** Kills every server (process groups included) and waits until they are reaped. */
  async close(): Promise<void> {
    this.#closed = true;
    const starting = [...this.#slots.values()].map((s) => s.starting).filter((p) =>
      p !== undefined
    );
    await Promise.allSettled(starting);
    await Promise.allSettled([...this.#slots.keys()].map((name) => this.stop(name)));
    await this.#pids?.clear();
  }

  #slot(server: string): Slot {
    let slot = this.#slots.get(server);
    if (!slot) {
      slot = { crashes: 0, lastCrashAt: 0, lastCrash: "", lastUsed: 0 };
      this.#slots.set(server, slot);
    }
    return slot;
  }

  async #acquire(slot: Slot, spec: LaunchSpec): Promise<ServerProcess> {
    const key = launchKey(spec);
    if (slot.proc?.alive && slot.key === key) return slot.proc;
    if (slot.starting && slot.key === key) return await slot.starting;
    if (slot.proc?.alive) await this.stop(spec.server); // launch spec changed: restart
    slot.key = key;
    slot.starting = this.#start(slot, spec).finally(() => (slot.starting = undefined));
    return await slot.starting;
  }

  async #start(slot: Slot, spec: LaunchSpec): Promise<ServerProcess> {
    await this.#reaped;
    if (slot.crashes >= this.#sup.maxCrashes) {
      const wait = slot.lastCrashAt + this.#sup.cooldownMs - this.#clock.now();
      if (wait > 0) {
        throw new PmlError(
          "DEPENDENCY_CRASHED",
          `The ${spec.server} server crashed ${slot.crashes} times in a row (last: ${slot.lastCrash}); ` +
            `PML will not restart it for ${Math.ceil(wait / 1000)} s`,
        );
      }
      slot.crashes = this.#sup.maxCrashes - 1; // one more try after the cooldown
    }
    if (slot.crashes > 0) {
      await sleep(
        this.#clock,
        Math.min(this.#sup.backoffMs * 2 ** (slot.crashes - 1), this.#sup.maxBackoffMs),
      );
    }
    if (this.#closed) {
      throw new PmlError("DEPENDENCY_STOPPED", `Cannot start ${spec.server}: PML is shutting down`);
    }
    let proc: ServerProcess;
    try {
      proc = await ServerProcess.start(spec, {
        startTimeoutMs: this.#sup.startTimeoutMs,
        onSpawn: (pid) => void this.#pids?.add(pid, spec.server),
        onStderr: (line) => this.#onStderr?.(spec.server, line),
        hub: this.#hub,
      });
    } catch (err) {
      this.#crashed(slot, (err as Error).message.split("\n")[0]);
      throw err;
    }
    slot.proc = proc;
    const pid = proc.pid;
    proc.exited.then((exit) => {
      void this.#pids?.remove(pid);
      if (slot.proc === proc) {
        slot.proc = undefined;
        this.#disarm(slot);
      }
      if (!exit.requested) {
        this.#crashed(slot, exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`);
      }
    });
    if (this.#closed) {
      await proc.stop(0);
      throw new PmlError("DEPENDENCY_STOPPED", `Cannot start ${spec.server}: PML is shutting down`);
    }
    return proc;
  }

  #crashed(slot: Slot, why: string): void {
    slot.crashes++;
    slot.lastCrashAt = this.#clock.now();
    slot.lastCrash = why;
  }

  /**
   * A call starts or ends: the process stops once `idleMs` pass with no call in flight and none
   * started or ended. One timer per slot, armed once and moved on only when it fires early: setting
   * and clearing a timer around every call cost ~9 µs and a few hundred bytes of garbage per call.
   */
  #touch(slot: Slot): void {
    slot.lastUsed = this.#clock.now();
    if (slot.idleTimer === undefined) this.#armIdle(slot, this.#sup.idleMs);
  }

  #armIdle(slot: Slot, ms: number): void {
    slot.idleTimer = this.#clock.setTimeout(() => {
      slot.idleTimer = undefined;
      const proc = slot.proc;
      if (!proc || proc.inFlight > 0) return; // the call in flight arms it again when it ends
      const left = slot.lastUsed + this.#sup.idleMs - this.#clock.now();
      if (left > 0) return this.#armIdle(slot, left);
      slot.proc = undefined;
      void proc.stop();
    }, ms);
  }

  #disarm(slot: Slot): void {
    this.#clock.clearTimeout(slot.idleTimer);
    slot.idleTimer = undefined;
  }
}

const launchKeys = new WeakMap<LaunchSpec, string>();

/**
 * What identifies a launch (a changed one restarts the server), computed once per spec object: the
 * stdio target hands the same spec to every call, and its environment is the whole of the user's.
 */
function launchKey(spec: LaunchSpec): string {
  let key = launchKeys.get(spec);
  if (key === undefined) {
    key = JSON.stringify([spec.command, spec.args, spec.env, spec.cwd]);
    launchKeys.set(spec, key);
  }
  return key;
}
