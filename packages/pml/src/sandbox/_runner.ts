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

const rawRead = Deno.stdin.read.bind(Deno.stdin);
// Taken now as well (before any module code runs); only the std sandboxes expose `gc`.
const collectWhenIdle = idleCollector();
const rawWriteSync = Deno.stdout.writeSync.bind(Deno.stdout);
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
const pendingMcp = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

function mcpProxy(callId: number): unknown {
  return new Proxy({}, {
    get: (_, ns) =>
      typeof ns !== "string" ? undefined : new Proxy({}, {
        get: (_, action) =>
          typeof action !== "string"
            ? undefined
            : (args: unknown = {}) =>
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

async function runCall(modules: ModuleTable, msg: Extract<HostMessage, { t: "call" }>) {
  try {
    const fn = modules[msg.ns]?.[msg.action];
    if (typeof fn !== "function" || msg.action.startsWith("_")) {
      throw new TypeError(`Module "${msg.ns}" has no action "${msg.action}"`);
    }
    const value = await (fn as ModuleFn)(msg.args ?? {}, {
      ...msg.ctx,
      mcp: mcpProxy(msg.id),
      createMessage: createMessage(msg.id),
    });
    send({ t: "result", id: msg.id, ok: true, value: value === undefined ? null : value });
  } catch (err) {
    send({ t: "result", id: msg.id, ok: false, error: toWire(err) });
  }
}

function handle(modules: ModuleTable, msg: HostMessage): void {
  if (msg.t === "call") {
    runCall(modules, msg);
  } else if (msg.t === "mcp_result") {
    const waiter = pendingMcp.get(msg.id);
    if (!waiter) return;
    pendingMcp.delete(msg.id);
    if (msg.ok) waiter.resolve(msg.value);
    else waiter.reject(Object.assign(new Error(msg.error.message), { code: msg.error.code }));
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
