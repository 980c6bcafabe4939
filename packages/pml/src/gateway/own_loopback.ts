/**
 * A local page of `pml` on its own loopback address (the approval page, the sign-in redirect): a
 * random `127.x.y.z` (Linux routes all of 127/8 to `lo`), so that no other local server shares its
 * host and the browser's cookies for it; where only `127.0.0.1` can be bound (macOS), that, said
 * through `warn`.
 */

/** A random loopback address `127.x.y.z` outside `127.0.0.0/16`. */
export function randomLoopback(): string {
  const [a, b, c] = crypto.getRandomValues(new Uint8Array(3));
  return `127.${1 + (a % 254)}.${b}.${1 + (c % 254)}`;
}

/**
 * Serves `handler` on `address()` (any free port), or on `127.0.0.1` when that cannot be bound,
 * with `warn(fallback(address, error))`. The server does not keep `pml` alive.
 */
export function serveOwnLoopback(
  handler: (req: Request) => Response | Promise<Response>,
  opts: {
    address: () => string;
    warn: (line: string) => void;
    fallback: (wanted: string, error: string) => string;
  },
): Deno.HttpServer<Deno.NetAddr> {
  const serve = (hostname: string) =>
    Deno.serve({ hostname, port: 0, onListen: () => {} }, handler);
  const wanted = opts.address();
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = serve(wanted);
  } catch (err) {
    if (wanted === "127.0.0.1") throw err;
    opts.warn(opts.fallback(wanted, (err as Error).message));
    server = serve("127.0.0.1");
  }
  server.unref();
  return server;
}
