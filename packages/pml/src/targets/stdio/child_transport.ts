import type { JSONRPCMessage } from "../../sdk/types.ts";
import { printable } from "../../sandbox/printable.ts";
import type { LaunchSpec } from "../../deps/launch.ts";
import { killTree, killWithChildren } from "../../procfs.ts";
import { forEachLine } from "../../sandbox/_lines.ts";
import { NetProxy } from "../../sandbox/net_proxy.ts";
import { createGroup, joinThenRun } from "../../sandbox/cgroup.ts";
import { serializeMessage, type Transport } from "./_sdk_shared.ts";
import { isJsonRpcEnvelope } from "../../sdk/incoming.ts";

/** How a child ended. */
export interface ExitInfo {
  readonly code: number;
  readonly signal: string | null;
  /** True when PML stopped it (idle, shutdown), false for a crash. */
  readonly requested: boolean;
}

const encoder = new TextEncoder();
const STDERR_LINES = 20;

/**
 * An MCP client transport over a child process started with `Deno.Command`: newline-delimited
 * JSON-RPC on stdin/stdout (the SDK's framing), stderr kept as a short tail for error messages.
 * The child runs in its own session and process group (`detached`: `setsid`), so `close()` kills
 * the whole group (`kill(-pgid)`), grandchildren included. It inherits no environment.
 */
export class ChildTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly spec: LaunchSpec;
  #child?: Deno.ChildProcess;
  #writer?: WritableStreamDefaultWriter<Uint8Array>;
  #stderr: string[] = [];
  #queue: string[] = [];
  #flushing?: Promise<void>;
  #stopping = false;
  #exit?: ExitInfo;
  #exited?: Promise<ExitInfo>;
  readonly #onStderr?: (line: string) => void;

  constructor(spec: LaunchSpec, opts: { onStderr?: (line: string) => void } = {}) {
    this.spec = spec;
    this.#onStderr = opts.onStderr;
  }

  /** Process id, also the process group id. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Set once the process has exited. */
  get exit(): ExitInfo | undefined {
    return this.#exit;
  }

  /** Resolves when the process has exited and been reaped. */
  get exited(): Promise<ExitInfo> {
    return this.#exited ?? Promise.resolve({ code: 0, signal: null, requested: true });
  }

  /** The last lines the process wrote to stderr. */
  stderrTail(): string {
    return this.#stderr.join("\n");
  }

  start(): Promise<void> {
    const { command, args, env, cwd, netProxy } = this.spec;
    // The sandbox's only way to the network (its granted hosts), outside it, for its lifetime.
    const proxy = netProxy &&
      new NetProxy(netProxy.grants, { dir: netProxy.dir, tcp: netProxy.tcp });
    // Behind Landlock or Seatbelt, its home, temp folder and Deno cache: made now, removed at its
    // end.
    const own = this.spec.landlock?.privateDir ?? this.spec.seatbelt?.privateDir;
    if (own) makePrivateDir(own);
    // Its tasks and memory, where a control group can hold them (`cgroup.ts`).
    const group = this.spec.group && createGroup(this.spec.group);
    const [program, ...argv] = group ? joinThenRun(group, [command, ...args]) : [command, ...args];
    try {
      this.#child = new Deno.Command(program, {
        args: argv,
        cwd,
        clearEnv: true,
        env: { ...env },
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
        detached: true,
      }).spawn();
    } catch (err) {
      proxy?.close();
      void group?.remove();
      if (own) removeQuietly(own);
      throw err;
    }
    this.#writer = this.#child.stdin.getWriter();
    this.#writer.closed.catch(() => {});
    this.#readStdout(this.#child.stdout);
    this.#readStderr(this.#child.stderr);
    this.#exited = this.#child.status.then(async (status) => {
      this.#killGroup("SIGKILL", { reaped: true }); // leftovers of the group (grandchildren)
      proxy?.close();
      if (own) removeQuietly(own);
      await group?.remove();
      this.#exit = { code: status.code, signal: status.signal, requested: this.#stopping };
      this.onclose?.();
      return this.#exit;
    });
    return Promise.resolve();
  }

  /**
   * Writes a message. While a write is in flight, later messages are queued and go out together in
   * the next write: under load, one pipe write carries many requests (fewer syscalls on both sides).
   */
  send(message: JSONRPCMessage): Promise<void> {
    if (!this.#writer || this.#exit) {
      return Promise.reject(new NotDeliveredError(`the ${this.spec.server} server is not running`));
    }
    this.#queue.push(serializeMessage(message));
    return this.#flushing ??= this.#flush();
  }

  async #flush(): Promise<void> {
    try {
      while (this.#queue.length) {
        const text = this.#queue.length === 1 ? this.#queue[0] : this.#queue.join("");
        this.#queue = [];
        await this.#writer!.write(encoder.encode(text));
      }
    } catch (err) {
      // The process went away before reading it (a broken pipe): nothing was delivered.
      throw new NotDeliveredError(`the ${this.spec.server} server went away`, { cause: err });
    } finally {
      this.#flushing = undefined;
    }
  }

  /**
   * Stops the process group: SIGTERM, then SIGKILL after `graceMs`; waits until it is reaped. Inside
   * the OS sandbox, the server gets its stdin's end as the only notice (bubblewrap passes no signal
   * on), then the sandbox is killed whole after `graceMs`.
   */
  async close(graceMs = 500): Promise<void> {
    if (!this.#child || this.#exit) return;
    this.#stopping = true;
    this.#writer?.close().catch(() => {});
    if (this.spec.osWall) {
      const pid = this.#child.pid;
      const kill = this.spec.landlock ? killTree : killWithChildren;
      const timer = setTimeout(() => this.#exit || kill(pid), graceMs);
      await this.exited;
      clearTimeout(timer);
      return;
    }
    this.#killGroup(graceMs > 0 ? "SIGTERM" : "SIGKILL");
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (graceMs > 0) timer = setTimeout(() => this.#killGroup("SIGKILL"), graceMs);
    await this.exited;
    clearTimeout(timer);
  }

  #killGroup(signal: Deno.Signal, opts: { reaped?: boolean } = {}): void {
    const pid = this.#child?.pid;
    if (!pid) return;
    // Inside bubblewrap the sandbox's init runs in a session of its own: killed with its parent
    // (only while that parent is not reaped: its pid could be another process's after).
    if (signal === "SIGKILL" && this.spec.osWall && !opts.reaped && !this.#exit) {
      // Behind Landlock there is no pid namespace: the init's whole tree.
      if (this.spec.landlock) killTree(pid);
      else killWithChildren(pid);
    }
    try {
      Deno.kill(-pid, signal);
    } catch { /* group already gone */ }
  }

  /**
   * Reads newline-delimited JSON-RPC from the server. Each line is parsed once and checked for the
   * envelope only: the SDK's protocol layer sorts it into request, notification or response with
   * its own schemas, so the SDK's `ReadBuffer` (which ran the whole message schema first) did the
   * same work twice per message.
   */
  async #readStdout(stdout: ReadableStream<Uint8Array>): Promise<void> {
    await forEachLine(stdout, (raw) => {
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      if (line.trim() === "") return;
      let message: unknown;
      try {
        message = JSON.parse(line);
      } catch (err) {
        this.onerror?.(err as Error); // a non-JSON line: skipped
        return;
      }
      if (!isJsonRpcEnvelope(message)) {
        this.onerror?.(new Error(`not a JSON-RPC 2.0 message: ${line.slice(0, 200)}`));
        return;
      }
      this.onmessage?.(message);
    });
  }

  async #readStderr(stderr: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    let partial = "";
    try {
      for await (const chunk of stderr) {
        const lines = (partial + decoder.decode(chunk, { stream: true })).split("\n");
        partial = lines.pop() ?? "";
        // A dependency's lines reach error messages and pml's log: no terminal control in them.
        for (const line of lines.filter((l) => l.trim()).map(printable)) {
          this.#stderr.push(line);
          if (this.#stderr.length > STDERR_LINES) this.#stderr.shift();
          this.#onStderr?.(line);
        }
      }
    } catch { /* process gone */ }
  }
}

/** A message that never reached the server (its process had exited): safe to send again. */
export class NotDeliveredError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "NotDeliveredError";
  }
}

/** The private folder of a Landlock sandbox (`home`, `tmp`, `deno`), only its user's. */
function makePrivateDir(dir: string): void {
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const info = Deno.lstatSync(dir);
  if (!info.isDirectory || info.uid !== Deno.uid() || (info.mode! & 0o077) !== 0) {
    throw new Error(`Cannot use "${dir}" as a sandbox's private folder: not this user's alone`);
  }
  for (const sub of ["home", "tmp", "deno"]) Deno.mkdirSync(`${dir}/${sub}`, { recursive: true });
}

function removeQuietly(dir: string): void {
  try {
    Deno.removeSync(dir, { recursive: true });
  } catch { /* already gone */ }
}
