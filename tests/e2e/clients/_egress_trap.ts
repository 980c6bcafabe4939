/**
 * An egress trap for real-client tests: an HTTP proxy on 127.0.0.1 that records every request a
 * client tries to send through it and refuses it. A client run with `HTTP_PROXY`/`HTTPS_PROXY`
 * pointing here and `NO_PROXY` naming loopback can reach the test's own loopback services only;
 * anything else (update checks, telemetry, a hosted API) lands in `attempts` and fails.
 */

/** The trap, listening until disposed. */
export interface EgressTrap extends AsyncDisposable {
  readonly url: string;
  /** The first line of every request received (`CONNECT host:443 HTTP/1.1`, `GET http://…`). */
  readonly attempts: string[];
  /** The proxy variables for a child's environment. */
  readonly env: Record<string, string>;
}

/** Starts the trap on a random loopback port. */
export function startEgressTrap(): EgressTrap {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const attempts: string[] = [];
  const connections = new Set<Deno.Conn>();
  const serving = (async () => {
    for await (const conn of listener) {
      connections.add(conn);
      (async () => {
        const buf = new Uint8Array(4096);
        const n = await conn.read(buf).catch(() => null);
        if (n) attempts.push(new TextDecoder().decode(buf.subarray(0, n)).split("\r\n")[0]);
        await conn.write(
          new TextEncoder().encode(
            "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
          ),
        ).catch(() => {});
        conn.close();
        connections.delete(conn);
      })().catch(() => {});
    }
  })().catch(() => {});
  const url = `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`;
  return {
    url,
    attempts,
    env: {
      HTTP_PROXY: url,
      HTTPS_PROXY: url,
      http_proxy: url,
      https_proxy: url,
      NO_PROXY: "127.0.0.1,localhost",
      no_proxy: "127.0.0.1,localhost",
    },
    async [Symbol.asyncDispose]() {
      listener.close();
      for (const c of connections) {
        try {
          c.close();
        } catch { /* closed */ }
      }
      await serving;
    },
  };
}
