import type { Config } from "../config/config.ts";
import { createGateway } from "../gateway/create_gateway.ts";
import { serveHttp } from "../ingress/http.ts";
import type { CliIo } from "./io.ts";

/**
 * `pml serve [--port N]`: the gateway over Streamable HTTP on `127.0.0.1:PORT/mcp` until SIGINT or
 * SIGTERM; then every session, sandbox and subprocess is closed. The URL is printed on stderr.
 */
export async function runServe(
  config: Config,
  io: CliIo,
  opts: { port?: number },
): Promise<number> {
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  const signals = ["SIGINT", "SIGTERM"] as const;
  for (const s of signals) Deno.addSignalListener(s, onSignal);
  try {
    const ingress = serveHttp(createGateway(config), {
      port: opts.port ?? config.port,
      signal: stop.signal,
      onListen: (url) =>
        io.stderr(`pml serve: MCP endpoint ${url} (workspace ${config.workspace})\n`),
    });
    await ingress.finished;
    return 0;
  } finally {
    for (const s of signals) Deno.removeSignalListener(s, onSignal);
  }
}
