/**
 * One connection of `pml` to a remote MCP server of `private_mcps` (`type: "http"`): an
 * `UpstreamSession` (`upstream/upstream_session.ts`, which carries the protocol) over the SDK's
 * Streamable HTTP or SSE client transport, built here from the entry: headers filled from the environment (`{NAME}` in a
 * header's value is the variable `NAME`, which the entry lists in `envRequired`). A `401` is
 * answered by the OAuth sign-in of `oauth/` when the entry has no `Authorization` header of its
 * own (the `authProvider` given to the SDK's transport).
 *
 * @module
 */
import { redactSecrets } from "../../redact_secrets.ts";
import { errorMessage, isPmlError, PmlError } from "../../errors.ts";
import type { OAuthClientProvider } from "../../sdk/client_auth.ts";
import { loadHttpClient, loadSseClient } from "../../sdk/load_http_client.ts";
import { UpstreamSession } from "../upstream/upstream_session.ts";
import type { UpstreamHub } from "../upstream/upstream_hub.ts";

/**
 * The SDK's HTTP client transports, imported on the first connection (`load_http_client.ts`),
 * remote servers declared or not.
 */
async function loadTransports() {
  const [http, sse] = await Promise.all([loadHttpClient(), loadSseClient()]);
  return {
    StreamableHTTPClientTransport: http.StreamableHTTPClientTransport,
    SSEClientTransport: sse.SSEClientTransport,
  };
}

/** A remote server as `.pml.json` declares it (values of headers are templates, no secrets). */
export interface RemoteDef {
  readonly server: string;
  readonly description: string;
  readonly proxyTo: string;
  readonly transport: "streamable-http" | "sse";
  readonly headers: Readonly<Record<string, string>>;
  readonly envRequired: readonly string[];
}

/**
 * `value` with `{NAME}` replaced by the variable's value, written as `form` says, for the names in
 * `names` (others are left as they are).
 */
function fill(
  value: string,
  names: readonly string[],
  env: Readonly<Record<string, string>>,
  form: (value: string) => string,
): string {
  return value.replace(
    /\{([A-Za-z_][A-Za-z0-9_]*)\}/g,
    (whole, name: string) =>
      names.includes(name) && env[name] !== undefined ? form(env[name]) : whole,
  );
}

/** `value` with `{NAME}` replaced by the variable's value, for the names in `names`. */
export function fillHeader(
  value: string,
  names: readonly string[],
  env: Readonly<Record<string, string>>,
): string {
  return fill(value, names, env, (v) => v);
}

/**
 * `proxyTo` with `{NAME}` replaced by the variable's value percent-encoded, for the names in
 * `names`: credentials `pml import` took out of a URL (`https://{X_URL_USER}:{X_URL_PASSWORD}@…`,
 * `?api_key={X_API_KEY}`). Userinfo reaches the server as Basic authorization (fetch sends it so).
 */
export function fillUrl(
  template: string,
  names: readonly string[],
  env: Readonly<Record<string, string>>,
): string {
  return fill(template, names, env, encodeURIComponent);
}

/**
 * The message for a 401 that no sign-in answered: the OAuth sign-in failed (`cause`), or the
 * entry's own `Authorization` header was refused (no sign-in is tried over a static header).
 */
export function unauthorizedMessage(def: RemoteDef, challenge: string, cause?: unknown): string {
  const oauth = /resource_metadata|bearer|oauth/i.test(challenge);
  const answered = `${def.server} (${def.proxyTo}) answered 401 Unauthorized${
    oauth ? ` with an OAuth challenge (${challenge.slice(0, 160)})` : ""
  }`;
  return cause !== undefined
    ? `${answered}, and its OAuth sign-in failed: ${errorMessage(cause)}. If the server takes a ` +
      `token instead, give it as a header from a variable in private_mcps.${def.server}.headers ` +
      `of .pml.json (e.g. "Authorization": "Bearer {TOKEN}", with "TOKEN" in envRequired).`
    : `${answered} to the Authorization header of private_mcps.${def.server}.headers: check the ` +
      `token in its variable, or remove the header to sign in with OAuth (\`pml auth ${def.server}\`).`;
}

/**
 * Connects to `def` (MCP handshake included). Errors: `SIGN_IN_REQUIRED` while the user must sign
 * in, `SIGN_IN_FAILED` or `UNAUTHORIZED` on a 401 nothing answered, `REMOTE_UNREACHABLE` otherwise, both naming the server and its URL.
 */
export async function connectRemote(
  def: RemoteDef,
  env: Readonly<Record<string, string>>,
  opts: {
    fetch?: typeof fetch;
    timeoutMs: number;
    /** Where the server's notifications outside a call go (`upstream/upstream_hub.ts`). */
    hub?: UpstreamHub;
    /** Signs in with OAuth on a 401 (`oauth/`); `signInPending` says the user must act. */
    authProvider?: OAuthClientProvider & { observe?(res: Response): void };
    signInPending?: () => Promise<boolean>;
  },
): Promise<UpstreamSession> {
  const headers = Object.fromEntries(
    Object.entries(def.headers).map(([k, v]) => [k, fillHeader(v, def.envRequired, env)]),
  );
  let challenge: string | undefined;
  const base = opts.fetch ?? fetch;
  const url = new URL(fillUrl(def.proxyTo, def.envRequired, env));
  const origin = url.origin;
  // The entry's headers go to the server's origin only: the SDK's client auth fetches the
  // metadata and tokens of an authorization server elsewhere with this fetch.
  const watched = async (input: string | URL | Request, init?: RequestInit) => {
    const target = new URL(input instanceof Request ? input.url : input);
    if (target.origin === origin && Object.keys(headers).length) {
      const merged = new Headers(init?.headers);
      for (const [k, v] of Object.entries(headers)) merged.set(k, v);
      init = { ...init, headers: merged };
    }
    const res = await base(input, init);
    if (res.status === 401) challenge = res.headers.get("www-authenticate") ?? "";
    opts.authProvider?.observe?.(res);
    return res;
  };
  const authProvider = opts.authProvider;
  const { SSEClientTransport, StreamableHTTPClientTransport } = await loadTransports();
  const transport = def.transport === "sse"
    ? new SSEClientTransport(url, { fetch: watched, authProvider })
    : new StreamableHTTPClientTransport(url, { fetch: watched, authProvider });
  try {
    return await UpstreamSession.open(def.server, transport, {
      timeoutMs: opts.timeoutMs,
      hub: opts.hub,
    });
  } catch (err) {
    await transport.close().catch(() => {});
    if (isPmlError(err)) throw err;
    if (await opts.signInPending?.()) {
      throw new PmlError("SIGN_IN_REQUIRED", `${def.server} waits for its user to sign in`, {
        details: { server: def.server },
      });
    }
    if (challenge !== undefined) {
      throw new PmlError(
        authProvider ? "SIGN_IN_FAILED" : "UNAUTHORIZED",
        unauthorizedMessage(def, challenge, authProvider ? err : undefined),
        { cause: err, details: { server: def.server } },
      );
    }
    throw new PmlError(
      "REMOTE_UNREACHABLE",
      `Cannot reach the remote MCP server ${def.server} (${def.proxyTo}, ${def.transport}): ${
        // The URL filled with its credentials may be quoted by fetch's own message.
        redactSecrets(errorMessage(err), def.envRequired.map((n) => env[n] ?? ""))}`,
      { cause: err, details: { server: def.server } },
    );
  }
}
