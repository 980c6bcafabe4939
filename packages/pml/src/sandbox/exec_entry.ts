/**
 * Sandbox entry for `pml:execute`: one module `exec` whose action `run` evaluates the code as the
 * body of an `AsyncFunction(mcp)` (never imported, so no module-graph read can leak a file).
 *
 * The process is started with no `--allow-*` flag at all (no read, write, net, env, run, ffi), so
 * the code can only reach the world through `mcp.ns.action()`, which crosses the stdin/stdout bridge
 * to the gateway, where every call passes permission and routing. Before any code runs, this file
 * takes away what the code could use to tamper with that bridge from inside: the raw stdio methods
 * (a forged line on stdout could corrupt the protocol stream) and the intrinsics the runner uses to
 * frame messages. Forged messages could still only ask the gateway for calls, which are checked the
 * same way as genuine ones; hardening keeps the code's own execution honest.
 */
import { serveModules } from "./_runner.ts";

const AsyncFunction = Object.getPrototypeOf(async function () {}).constructor as new (
  ...args: string[]
) => (...args: unknown[]) => Promise<unknown>;

function refuse(): never {
  throw new Deno.errors.NotCapable("The protocol streams of the pml:execute sandbox are reserved");
}

/** Raw stdin/stdout access would bypass the runner's framing: replace it, on objects and protos. */
function sealStdio(): void {
  for (const stream of [Deno.stdin, Deno.stdout] as unknown as Record<string, unknown>[]) {
    const proto = Object.getPrototypeOf(stream) as Record<string, unknown>;
    for (const name of ["read", "readSync", "write", "writeSync", "close", "setRaw"]) {
      for (const target of [stream, proto]) {
        try {
          Object.defineProperty(target, name, {
            value: refuse,
            writable: false,
            configurable: false,
          });
        } catch { /* not configurable: already fixed */ }
      }
    }
    // The web streams over the same descriptors (`Deno.stdout.writable`) would bypass it too.
    for (const name of ["readable", "writable"]) {
      for (const target of [stream, proto]) {
        try {
          Object.defineProperty(target, name, { get: refuse, configurable: false });
        } catch { /* not configurable: already fixed */ }
      }
    }
    Object.freeze(proto);
    Object.freeze(stream);
  }
}

/** Globals the runner relies on, made read-only (the code cannot swap them under the runner). */
function freezeIntrinsics(): void {
  const g = globalThis as unknown as Record<string, { prototype?: object }>;
  for (
    const name of [
      "JSON",
      "Promise",
      "Map",
      "Proxy",
      "TextEncoder",
      "TextDecoder",
      "Uint8Array",
      "Error",
      "Deno",
    ]
  ) {
    const value = g[name];
    Object.defineProperty(globalThis, name, { value, writable: false, configurable: false });
    if (name === "JSON") Object.freeze(value);
    // Error.prototype stays open: subclasses assign `this.name`, which a frozen prototype forbids.
    else if (name !== "Deno" && name !== "Error" && value?.prototype) {
      Object.freeze(value.prototype);
    }
  }
  // Where `subarray` and the `length` getter of every typed array live.
  Object.freeze(Object.getPrototypeOf(Uint8Array.prototype));
  Object.freeze(Promise);
  Object.freeze(Deno);
}

sealStdio();
freezeIntrinsics();

await serveModules({
  exec: {
    /** Runs `code` as an async function body with `mcp` in scope; its return value is the result. */
    run: async (args: { code: string }, ctx: { mcp: unknown }) => {
      const fn = new AsyncFunction("mcp", String(args.code));
      return await fn.call(undefined, Object.freeze(ctx.mcp));
    },
  },
});
