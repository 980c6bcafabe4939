/**
 * One connection of `pml` to a remote MCP server of `private_mcps` (`type: "http"`): the SDK
 * `Client` over Streamable HTTP or SSE, headers filled from the environment (`{NAME}` in a
 * header's value is the variable `NAME`, which the entry lists in `envRequired`). A `401` is read
 * for what it is: OAuth sign-in is not supported yet, and the message says so.
 *
 * @module
 */
import { Client } from "../../sdk/client.ts";
import { lazySchemaValidator } from "../../sdk/validation.ts";
import { errorMessage, PmlError } from "../../errors.ts";
import { loadHttpClient, loadSseClient } from "../../sdk/load_http_client.ts";

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

/** `value` with `{NAME}` replaced by the variable's value, for the names in `names`. */
export function fillHeader(
  value: string,
  names: readonly string[],
  env: Readonly<Record<string, string>>,
): string {
  return value.replace(
    /\{([A-Za-z_][A-Za-z0-9_]*)\}/g,
    (whole, name: string) => names.includes(name) && env[name] !== undefined ? env[name] : whole,
  );
}

/** The message for a server that wants OAuth. */
export function oauthMessage(def: RemoteDef, challenge: string): string {
  const oauth = /resource_metadata|bearer|oauth/i.test(challenge);
  return `${def.server} (${def.proxyTo}) answered 401 Unauthorized${
    oauth ? ` with an OAuth challenge (${challenge.slice(0, 160)})` : ""
  }: PML does not support OAuth sign-in for remote MCP servers yet. If the server accepts a ` +
    `token, give it as a header from a variable in private_mcps.${def.server}.headers of .pml.json ` +
    `(e.g. "Authorization": "Bearer {TOKEN}", with "TOKEN" in envRequired); otherwise keep this ` +
    `server in your client's own configuration for now.`;
}

/**
 * Connects to `def` (MCP handshake included). Errors: `OAUTH_NOT_SUPPORTED` on a 401,
 * `REMOTE_UNREACHABLE` otherwise, both naming the server and its URL.
 */
export async function connectRemote(
  def: RemoteDef,
  env: Readonly<Record<string, string>>,
  opts: { fetch?: typeof fetch; timeoutMs: number },
): Promise<Client> {
  const headers = Object.fromEntries(
    Object.entries(def.headers).map(([k, v]) => [k, fillHeader(v, def.envRequired, env)]),
  );
  let challenge: string | undefined;
  const base = opts.fetch ?? fetch;
  const watched = async (input: string | URL | Request, init?: RequestInit) => {
    const res = await base(input, init);
    if (res.status === 401) challenge = res.headers.get("www-authenticate") ?? "";
    return res;
  };
  const url = new URL(def.proxyTo);
  const { SSEClientTransport, StreamableHTTPClientTransport } = await loadTransports();
  const transport = def.transport === "sse"
    ? new SSEClientTransport(url, { requestInit: { headers }, fetch: watched })
    : new StreamableHTTPClientTransport(url, { requestInit: { headers }, fetch: watched });
  const client = new Client(
    { name: "pml", version: "0.1.0" },
    { capabilities: {}, jsonSchemaValidator: lazySchemaValidator() },
  );
  try {
    await client.connect(transport, { timeout: opts.timeoutMs });
    return client;
  } catch (err) {
    await client.close().catch(() => {});
    if (challenge !== undefined) {
      throw new PmlError("OAUTH_NOT_SUPPORTED", oauthMessage(def, challenge), {
        details: { server: def.server },
      });
    }
    throw new PmlError(
      "REMOTE_UNREACHABLE",
      `Cannot reach the remote MCP server ${def.server} (${def.proxyTo}, ${def.transport}): ${
        errorMessage(err)
      }`,
      { cause: err, details: { server: def.server } },
    );
  }
}
