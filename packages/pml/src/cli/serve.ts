import type { Config } from "../config/config.ts";
import { createGateway } from "../gateway/create_gateway.ts";
import { serveHttp } from "../ingress/http.ts";
import type { CliIo } from "./io.ts";
import { withStopSignal } from "./stop_signal.ts";

/**
 * `pml serve [--port N]`: the gateway over Streamable HTTP on `127.0.0.1:PORT/mcp` until SIGINT or
 * SIGTERM; then every session, sandbox and subprocess is closed. The URL is printed on stderr.
 */
export async function runServe(
  config: Config,
  io: CliIo,
  opts: { port?: number },
): Promise<number> {
  return await withStopSignal(async (signal) => {
    const ingress = await serveHttp(createGateway(config), {
      port: opts.port ?? config.port,
      signal,
      onListen: (url) =>
        io.stderr(`pml serve: MCP endpoint ${url} (workspace ${config.workspace})\n`),
    });
    await ingress.finished;
    return 0;
  });
}
