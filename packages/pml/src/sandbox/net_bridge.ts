/**
 * The sandbox's side of its network wall ({@link NetProxy} is the host's side). A sandbox with
 * network grants keeps its own network namespace, where only loopback exists; before its command
 * starts, `socat` listens on that loopback at {@link HTTP_PROXY_PORT} and {@link SOCKS_PROXY_PORT}
 * and forwards each connection to the proxy's unix sockets, bound read-only at
 * {@link SANDBOX_NET_DIR}. The proxy variables of {@link PROXY_ENV} point programs at it (curl,
 * git, npm, pip; Deno's `fetch` with {@link HTTP_PROXY_ENV}); a program that ignores them reaches
 * nothing.
 *
 * @module
 */

/** Where the proxy's folder (`http.sock`, `socks.sock`) is bound inside the sandbox. */
export const SANDBOX_NET_DIR = "/run/pml-net";
/** The HTTP proxy (CONNECT and absolute-form requests) on the sandbox's own loopback. */
export const HTTP_PROXY_PORT = 3128;
/** The SOCKS5 proxy on the sandbox's own loopback (other TCP). */
export const SOCKS_PROXY_PORT = 1080;

const HTTP_URL = `http://127.0.0.1:${HTTP_PROXY_PORT}`;
const SOCKS_URL = `socks5h://127.0.0.1:${SOCKS_PROXY_PORT}`;

/**
 * The HTTP(S) proxy variables, for Deno code: Deno's `fetch` prefers `ALL_PROXY` when set, and
 * then asks for `--allow-net` to the SOCKS port itself, which a module is not granted.
 */
export const HTTP_PROXY_ENV: Readonly<Record<string, string>> = {
  HTTP_PROXY: HTTP_URL,
  HTTPS_PROXY: HTTP_URL,
  // Lower case too: curl reads only `http_proxy`.
  http_proxy: HTTP_URL,
  https_proxy: HTTP_URL,
  // The sandbox's own loopback has nothing but the bridge: every destination goes through it.
  NO_PROXY: "",
  no_proxy: "",
};

/** The proxy variables of a sandbox that runs programs: HTTP(S), and SOCKS5 for other TCP. */
export const PROXY_ENV: Readonly<Record<string, string>> = {
  ...HTTP_PROXY_ENV,
  ALL_PROXY: SOCKS_URL,
  all_proxy: SOCKS_URL,
};

/** A listening socket of `port` on 127.0.0.1, as `/proc/net/tcp` shows it. */
function listening(port: number): string {
  return `0100007F:${port.toString(16).toUpperCase().padStart(4, "0")} 00000000:0000 0A`;
}

/**
 * `command` started behind the bridge: `sh` starts both `socat` listeners, waits until they
 * listen (so the command's first connection finds them), then becomes the command (`exec`: same
 * pid, so the runner stays the first process of the sandbox and `socat` runs below it).
 */
export function bridged(command: readonly string[], sh = "/bin/sh"): string[] {
  const forward = (port: number, socket: string) =>
    `socat TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:${SANDBOX_NET_DIR}/${socket} &`;
  const script = [
    "command -v socat >/dev/null || { echo 'pml: the network bridge needs socat " +
    "(Debian/Ubuntu: apt-get install socat)' >&2; exit 127; }",
    forward(HTTP_PROXY_PORT, "http.sock"),
    forward(SOCKS_PROXY_PORT, "socks.sock"),
    `until grep -q '${listening(HTTP_PROXY_PORT)}' /proc/net/tcp && ` +
    `grep -q '${listening(SOCKS_PROXY_PORT)}' /proc/net/tcp; do sleep 0.002; done`,
    'exec "$@"',
  ].join("\n");
  return [sh, "-c", script, "pml-net", ...command];
}

const HTTP_VARS = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] as const;
const SOCKS_VARS = ["ALL_PROXY", "all_proxy"] as const;

/**
 * `env` with its proxy variables pointed at the proxy's own loopback ports (HTTP, SOCKS5): where
 * no namespace holds a bridge (Seatbelt on macOS), the sandbox connects to the host-side proxy's
 * TCP listeners directly. Variables `env` does not set stay unset.
 *
 * @example
 * ```ts
 * proxyEnvOnPorts({ ...HTTP_PROXY_ENV }, [50001, 50002]).HTTP_PROXY; // "http://127.0.0.1:50001"
 * ```
 */
export function proxyEnvOnPorts(
  env: Readonly<Record<string, string>>,
  [http, socks]: readonly [number, number],
): Record<string, string> {
  const out = { ...env };
  for (const name of HTTP_VARS) if (name in out) out[name] = `http://127.0.0.1:${http}`;
  for (const name of SOCKS_VARS) if (name in out) out[name] = `socks5h://127.0.0.1:${socks}`;
  return out;
}

/**
 * The same for a POSIX shell, the ports being in `$h` and `$s`: what a command started before the
 * proxy listens runs first (`wallCommand` on macOS, for stdio dependencies).
 */
export function proxyEnvOnPortsShell(): string {
  const set = (names: readonly string[], url: string) =>
    `if [ -n "\${${names[0]}+x}" ]; then export ${names.map((n) => `${n}=${url}`).join(" ")}; fi`;
  return [
    set(HTTP_VARS, "http://127.0.0.1:$h"),
    set(SOCKS_VARS, "socks5h://127.0.0.1:$s"),
  ].join(" && ");
}
