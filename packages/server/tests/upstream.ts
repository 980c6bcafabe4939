/**
 * Test upstreams for the http proxy: `@modelcontextprotocol/server-everything` in Streamable
 * HTTP mode on a loopback port, and a recording proxy in front of it that keeps the headers of
 * every request it forwards.
 */
import { join } from "node:path";

const REPO = join(import.meta.dirname!, "../../..");
const EVERYTHING = join(REPO, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const LOOPBACK_ONLY = join(import.meta.dirname!, "fixtures/mcp/loopback_only.mjs");

/** A running upstream MCP server. */
export interface Upstream {
  /** `http://127.0.0.1:<port>/mcp` */
  readonly url: string;
  close(): Promise<void>;
}

/** Starts server-everything (`streamableHttp`) under Node on 127.0.0.1, any free port. */
export async function startEverything(): Promise<Upstream> {
  const child = new Deno.Command("node", {
    args: ["--import", LOOPBACK_ONLY, EVERYTHING, "streamableHttp"],
    env: { PORT: "0" },
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const lines = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  let port: number | undefined;
  const deadline = setTimeout(() => child.kill("SIGKILL"), 20_000);
  while (port === undefined) {
    const { value, done } = await lines.read();
    if (done) throw new Error(`server-everything exited before listening: ${seen}`);
    seen += value;
    const match = /LOOPBACK_PORT=(\d+)/.exec(seen);
    if (match) port = Number(match[1]);
  }
  clearTimeout(deadline);
  const drain = (async () => {
    while (!(await lines.read()).done) { /* keep the pipe flowing */ }
  })();
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    close: async () => {
      child.kill("SIGTERM");
      await child.status;
      await drain.catch(() => {});
    },
  };
}

/** A loopback HTTP proxy that forwards to `target` and records each request's headers. */
export function startRecordingProxy(target: string): Upstream & { readonly seen: Headers[] } {
  const seen: Headers[] = [];
  const targetUrl = new URL(target);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    seen.push(new Headers(request.headers));
    const url = new URL(request.url);
    url.protocol = targetUrl.protocol;
    url.host = targetUrl.host;
    const headers = new Headers(request.headers);
    headers.delete("host");
    return fetch(url, { method: request.method, headers, body: request.body });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    seen,
    close: () => server.shutdown(),
  };
}
