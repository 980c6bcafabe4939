import type process from "node:process";
import type { JSONRPCMessage } from "../sdk/types.ts";
import type { Gateway } from "../gateway/gateway.ts";
import { createMcpServer } from "../gateway/mcp_server.ts";
import type { Server } from "../sdk/server.ts";
import { LineStdioTransport, MessageTooLargeError, NotJsonRpcError } from "./stdio_transport.ts";
import { isUnsortedMessageError } from "../sdk/incoming.ts";
import {
  idleCollector,
  largeMessageCollector,
  memoryReducingGc,
  PROCESS_CLOCK,
} from "../sandbox/_idle_gc.ts";
import { warmUpLoadedAnalysis } from "../execute/plan.ts";
import { lookAhead } from "../sandbox/look_ahead.ts";
import { refreshHostViews } from "../sandbox/host_view.ts";

/**
 * Serves `gateway` over stdio until stdin closes. Stdout carries JSON-RPC only (everything else
 * goes to stderr); a malformed line, or one over the 64 MiB message limit, is answered with a
 * JSON-RPC error and the server keeps serving.
 * Resolves after the gateway (and every process it started) has been closed.
 */
export function serveStdio(
  gateway: Gateway,
  io: StdioIo = {},
): Promise<void> {
  // The sandbox policies' look at the machine is taken between an agent's calls, not on them, and
  // the analysis of pml:execute is run again with it: after the idle collection (which drops
  // compiled code) and after a pause without one, its first run paid ~0.3 ms more
  // (analysis/warm_up.ts, docs/speed.md).
  return serveServerOverStdio(
    createMcpServer(gateway),
    () => gateway.close(),
    io,
    lookAhead((usedWithinMs) => {
      refreshHostViews(usedWithinMs);
      warmUpLoadedAnalysis();
    }),
    warmUpLoadedAnalysis,
  );
}

/** The streams `pml stdio` talks over (tests); by default the process's own stdin and stdout. */
export interface StdioIo {
  stdin?: NodeJS.ReadableStream & { on: typeof process.stdin.on };
  stdout?: typeof process.stdout;
}

/**
 * Serves one MCP `server` over stdio until stdin closes, then runs `close`. Used for the gateway and
 * for the stand-in that reports an invalid `.pml.json` (see `config_error_server.ts`). `onread` runs
 * on each message read, next to the idle collection (the gateway's look-ahead, `look_ahead.ts`);
 * `afterIdleCollect` right after each idle collection.
 */
export async function serveServerOverStdio(
  server: Server,
  close: () => Promise<void>,
  io: StdioIo = {},
  onread?: () => void,
  afterIdleCollect?: () => void,
): Promise<void> {
  // Anything printed by mistake must not corrupt the protocol stream.
  console.log = console.error;
  console.info = console.error;
  // An idle V8 keeps the garbage of a 100 MB `pml:execute` result (RSS stayed at ~800 MB): collect
  // shortly after each large message, when the launcher exposed `gc` (`bin/pml`: `--expose-gc`).
  const transport = new LineStdioTransport(
    io.stdin,
    io.stdout,
    undefined,
    largeMessageCollector() ?? (() => {}),
  );
  const collect = idleCollector(memoryReducingGc(), PROCESS_CLOCK, afterIdleCollect);
  transport.onread = collect && onread ? () => (collect(), onread()) : collect ?? onread;
  let done!: () => void;
  const closed = new Promise<void>((resolve) => (done = resolve));
  let closing = false;
  const shutdown = async () => {
    if (closing) return;
    closing = true;
    await server.close().catch(() => {});
    await close();
    done();
  };
  server.onerror = (err) => {
    if (err instanceof MessageTooLargeError) {
      console.error(`pml: ${err.message}`);
      return; // the transport has answered it
    }
    const parseError = err instanceof SyntaxError;
    const invalid = !parseError && (err instanceof NotJsonRpcError || isUnsortedMessageError(err));
    if (parseError || invalid) {
      transport.send({
        jsonrpc: "2.0",
        id: null,
        error: parseError
          ? { code: -32700, message: `Parse error: ${err.message}` }
          : { code: -32600, message: "Invalid Request: not a JSON-RPC 2.0 message" },
      } as unknown as JSONRPCMessage).catch(() => {});
      return;
    }
    console.error(`pml: ${err.message}`);
  };
  // The transport closes when stdin ends (the client went away); the server's close follows,
  // after what the server itself ends on close (its subscriptions to the gateway).
  const serverClosed = server.onclose;
  server.onclose = () => {
    serverClosed?.();
    void shutdown();
  };
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    try {
      Deno.addSignalListener(signal, () => void shutdown());
    } catch { /* not supported here */ }
  }
  await server.connect(transport);
  await closed;
}
