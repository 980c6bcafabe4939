/**
 * Runs inside a sandbox subprocess. Reads `call` messages on stdin, runs the module function and
 * writes `result` messages on stdout. Nested `mcp.ns.action()` calls cross back to the host as `mcp`
 * messages. Exits when stdin closes, so a sandbox never outlives its gateway.
 *
 * It imports only a line splitter: everything the sandbox can do is in its Deno flags.
 *
 * The protocol goes through the raw `Deno.stdin.read` and `Deno.stdout.writeSync`, taken here when
 * the module is evaluated: before the entry that imports it runs (`exec_entry.ts` then replaces them
 * for the code it runs, which can never reach these private copies). A raw read and one blocking
 * write per line cost about half of a round trip through `readable`/`writable` streams.
 */
import { forEachLine } from "./_lines.ts";
import { idleCollector } from "./_idle_gc.ts";
import type { HostMessage, SandboxMessage, WireError } from "./protocol.ts";

// deno-lint-ignore no-explicit-any
type ModuleFn = (args: any, ctx: any) => unknown;
/** Modules the sandbox can run, by namespace. */
export type ModuleTable = Record<string, Record<string, unknown>>;

/**
 * The protocol's streams. A sandbox that runs programs (`shell:exec`) is started with the
 * `fds` channel (`os_sandbox.ts` `SandboxChannel`): the protocol comes on descriptors 3 and 4, and
 * the runner, before anything else runs, marks them close-on-exec (no program it starts inherits
 * them) and makes itself non-dumpable (`prctl(PR_SET_DUMPABLE, 0)`): the kernel then refuses its
 * `/proc/<pid>/fd`, `mem` and `environ` to every other process of the sandbox, which holds no
 * capability. The programs a command runs can neither read nor write the protocol.
 */
function protocolStreams(): {
  read: (b: Uint8Array) => Promise<number | null>;
  write: (b: Uint8Array) => number;
} {
  const libc = Deno.args.find((a) => a.startsWith("--pml-channel="))?.slice(
    "--pml-channel=".length,
  );
  if (!libc) {
    return {
      read: Deno.stdin.read.bind(Deno.stdin),
      write: Deno.stdout.writeSync.bind(Deno.stdout),
    };
  }
  const input = Deno.openSync("/proc/self/fd/3", { read: true });
  const output = Deno.openSync("/proc/self/fd/4", { write: true });
  const lib = Deno.dlopen(libc, {
    prctl: { parameters: ["i32", "u64", "u64", "u64", "u64"], result: "i32" },
    fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
  });
  const F_SETFD = 2;
  const FD_CLOEXEC = 1;
  const PR_SET_DUMPABLE = 4;
  const sealed = lib.symbols.fcntl(3, F_SETFD, FD_CLOEXEC) === 0 &&
    lib.symbols.fcntl(4, F_SETFD, FD_CLOEXEC) === 0 &&
    lib.symbols.prctl(PR_SET_DUMPABLE, 0n, 0n, 0n, 0n) === 0;
  lib.close();
  if (!sealed) {
    console.error("sandbox: cannot seal the protocol's channel; stopping");
    Deno.exit(70);
  }
  return { read: input.read.bind(input), write: output.writeSync.bind(output) };
}

const streams = protocolStreams();
const rawRead = streams.read;
// Taken now as well (before any module code runs); only the std sandboxes expose `gc`.
const collectWhenIdle = idleCollector();
const rawWriteSync = streams.write;
// What `send` calls on the way out, taken now as well: code running in this process (pml:execute
// code, registry modules) may replace prototype methods later, and a replaced `subarray` or
// `length` would make the runner itself write bytes of the code's choosing on the protocol stream.
const stringify = JSON.stringify;
const encode = TextEncoder.prototype.encode.bind(new TextEncoder());
const subarray = Function.prototype.call.bind(Uint8Array.prototype.subarray) as (
  bytes: Uint8Array,
  begin: number,
  end?: number,
) => Uint8Array;
const byteCount = Function.prototype.call.bind(
  Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), "length")!.get!,
) as (bytes: Uint8Array) => number;

/** Writes one line at once (no other line can interleave); exits if the host has gone. */
function send(message: SandboxMessage): void {
  let bytes: Uint8Array = encode(stringify(message) + "\n");
  try {
    while (byteCount(bytes)) bytes = subarray(bytes, rawWriteSync(bytes));
  } catch {
    Deno.exit(0);
  }
}

/** Stdin in chunks (one buffer, reused: each chunk is decoded before the next read). */
async function* stdinChunks(): AsyncGenerator<Uint8Array> {
  const buf = new Uint8Array(64 * 1024);
  for (;;) {
    const n = await rawRead(buf);
    if (n === null) return;
    yield subarray(buf, 0, n);
  }
}

function toWire(err: unknown): WireError {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return { name: err.name, message: err.message, ...(typeof code === "string" ? { code } : {}) };
  }
  return { name: "Error", message: String(err) };
}

// Module output must never reach the protocol stream.
for (const name of ["log", "info", "debug", "table", "dir"] as const) {
  // deno-lint-ignore no-explicit-any
  (console as any)[name] = console.error;
}

let nextMcpId = 1;
type Waiter = { resolve: (v: unknown) => void; reject: (e: Error) => void };
const pendingMcp = new Map<number, Waiter>();

/**
 * Read-ahead slots of the calls in flight, by call id: one per key the host listed, holding its
 * outcome once the host sent it, or the code waiting for it once the code made that call.
 */
interface AheadSlot {
  readonly key: string;
  taken: boolean;
  outcome?: Extract<HostMessage, { t: "ahead_result" }>;
  waiter?: Waiter;
}
const aheadSlots = new Map<number, AheadSlot[]>();

const parse = JSON.parse;
const objectKeys = Object.keys;
const isArray = Array.isArray;
const sortStrings = Function.prototype.call.bind(Array.prototype.sort) as (a: string[]) => string[];

/** `<tool> <args as canonical JSON>`: the host's key of the same call (`execute/read_ahead.ts`). */
function aheadKey(tool: string, args: unknown): string {
  const sorted = (_key: string, v: unknown): unknown => {
    if (!v || typeof v !== "object" || isArray(v)) return v;
    const out: Record<string, unknown> = {};
    for (const k of sortStrings(objectKeys(v))) out[k] = (v as Record<string, unknown>)[k];
    return out;
  };
  try {
    return `${tool} ${stringify(parse(stringify(args ?? {})), sorted)}`;
  } catch {
    return ""; // not JSON (a BigInt, a cycle): no key matches, the call goes as `mcp` and fails there
  }
}

function settle(waiter: Waiter, msg: Extract<HostMessage, { t: "mcp_result" | "ahead_result" }>) {
  if (msg.ok) waiter.resolve(msg.value);
  else waiter.reject(Object.assign(new Error(msg.error.message), { code: msg.error.code }));
}

/** The outcome of a call the host started ahead, if `key` is one it listed and not yet taken. */
function takeAhead(callId: number, key: string): Promise<unknown> | undefined {
  // Plain loops: the code may have replaced array methods by now.
  const slots = aheadSlots.get(callId) ?? [];
  for (let index = 0; index < slots.length; index++) {
    const slot = slots[index];
    if (slot.taken || slot.key !== key) continue;
    slot.taken = true;
    send({ t: "mcp_ahead", callId, index });
    return new Promise((resolve, reject) => {
      slot.waiter = { resolve, reject };
      if (slot.outcome) settle(slot.waiter, slot.outcome);
    });
  }
  return undefined;
}

function mcpProxy(callId: number): unknown {
  return new Proxy({}, {
    get: (_, ns) =>
      typeof ns !== "string" ? undefined : new Proxy({}, {
        get: (_, action) =>
          typeof action !== "string"
            ? undefined
            : (args: unknown = {}) =>
              (aheadSlots.has(callId) && takeAhead(callId, aheadKey(`${ns}:${action}`, args))) ||
              new Promise((resolve, reject) => {
                const id = nextMcpId++;
                pendingMcp.set(id, { resolve, reject });
                send({ t: "mcp", id, callId, tool: `${ns}:${action}`, args });
              }),
      }),
  });
}

/** `ctx.createMessage(params)`: a `sampling/createMessage` of the module, answered by the host. */
function createMessage(callId: number): (params: unknown) => Promise<unknown> {
  return (params) =>
    new Promise((resolve, reject) => {
      const id = nextMcpId++;
      pendingMcp.set(id, { resolve, reject });
      send({ t: "sample", id, callId, params });
    });
}

/**
 * The calls in flight, by id: whether the host cancelled it, and the controller of its
 * `ctx.signal`, made only when the module asks for the signal (the std reads never do).
 */
interface InFlight {
  cancelled: boolean;
  controller?: AbortController;
}
const inFlight = new Map<number, InFlight>();
// Taken now, like the others: code in this process cannot turn a cancellation off.
const Controller = AbortController;
const abortWith = Function.prototype.call.bind(AbortController.prototype.abort) as (
  controller: AbortController,
  reason: unknown,
) => void;
const signalOf = Function.prototype.call.bind(
  Object.getOwnPropertyDescriptor(AbortController.prototype, "signal")!.get!,
) as (controller: AbortController) => AbortSignal;
const CANCELLED = "the client cancelled the call";

/** `ctx.signal` of a call: aborted when the host sends `cancel` for it. */
function signalFor(call: InFlight): AbortSignal {
  if (!call.controller) {
    call.controller = new Controller();
    if (call.cancelled) abortWith(call.controller, CANCELLED);
  }
  return signalOf(call.controller);
}

async function runCall(modules: ModuleTable, msg: Extract<HostMessage, { t: "call" }>) {
  const call: InFlight = { cancelled: false };
  inFlight.set(msg.id, call);
  if (msg.ahead?.length) {
    const slots: AheadSlot[] = [];
    for (let i = 0; i < msg.ahead.length; i++) {
      slots[i] = { key: String(msg.ahead[i]), taken: false };
    }
    aheadSlots.set(msg.id, slots);
  }
  try {
    const fn = modules[msg.ns]?.[msg.action];
    if (typeof fn !== "function" || msg.action.startsWith("_")) {
      throw new TypeError(`Module "${msg.ns}" has no action "${msg.action}"`);
    }
    const value = await (fn as ModuleFn)(msg.args ?? {}, {
      ...msg.ctx,
      mcp: mcpProxy(msg.id),
      createMessage: createMessage(msg.id),
      get signal() {
        return signalFor(call);
      },
    });
    send({ t: "result", id: msg.id, ok: true, value: value === undefined ? null : value });
  } catch (err) {
    send({ t: "result", id: msg.id, ok: false, error: toWire(err) });
  } finally {
    aheadSlots.delete(msg.id);
    inFlight.delete(msg.id);
  }
}

function handle(modules: ModuleTable, msg: HostMessage): void {
  if (msg.t === "call") {
    runCall(modules, msg);
  } else if (msg.t === "cancel") {
    const call = inFlight.get(msg.id);
    if (!call || call.cancelled) return;
    call.cancelled = true;
    if (call.controller) abortWith(call.controller, CANCELLED);
  } else if (msg.t === "mcp_result") {
    const waiter = pendingMcp.get(msg.id);
    if (!waiter) return;
    pendingMcp.delete(msg.id);
    settle(waiter, msg);
  } else if (msg.t === "ahead_result") {
    const slot = aheadSlots.get(msg.callId)?.[msg.index];
    if (!slot || slot.outcome) return;
    slot.outcome = msg;
    if (slot.waiter) settle(slot.waiter, msg);
  }
}

/** Serves `modules` over stdin/stdout until stdin closes. */
export async function serveModules(modules: ModuleTable): Promise<void> {
  send({ t: "ready" });
  await forEachLine(stdinChunks(), (line) => {
    if (line.trim() === "") return;
    collectWhenIdle?.();
    try {
      handle(modules, JSON.parse(line) as HostMessage);
    } catch (err) {
      console.error(`sandbox: bad message from host: ${(err as Error).message}`);
    }
  });
  Deno.exit(0);
}
