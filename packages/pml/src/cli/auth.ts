/**
 * `pml auth NAME`: the human signs in to a remote server of `private_mcps` (OAuth, the MCP SDK's
 * client auth): the link is printed, and opened in a browser where one can be started; this
 * command serves the loopback redirect on its own `127.x.y.z` address, exchanges the code and
 * stores the tokens under PML's home (`oauth/sign_in_store.ts`), where a running `pml` finds them
 * (its waiting calls go on with `pml:continue`). `--list` shows what is signed in (no token);
 * `--logout NAME` forgets a sign-in, revoking it where the server offers revocation (RFC 7009).
 *
 * @module
 */
import type { Config } from "../config/config.ts";
import { errorMessage, PmlError } from "../errors.ts";
import { RedirectPage, SIGN_IN_TTL_MS } from "../oauth/redirect_page.ts";
import { oauthSettings } from "../oauth/remote_sign_in.ts";
import { checkSignInUrl, SignInProvider } from "../oauth/sign_in_provider.ts";
import { SignInStore, summary } from "../oauth/sign_in_store.ts";
import { loadClientAuth } from "../sdk/load_http_client.ts";
import { spawnDetached } from "../spawn_detached.ts";
import type { CliIo } from "./io.ts";
import { printableLine as q } from "../sandbox/printable.ts";

/** Options of {@link runAuth}; the defaults are the real ones. */
export interface AuthOptions {
  /** Try to open the link in a browser (`xdg-open`, `open`); `--no-browser` turns it off. */
  readonly browser: boolean;
  readonly openUrl?: (url: string) => void;
  readonly signal?: AbortSignal;
  readonly fetch?: typeof fetch;
}

/** The remote server `name` of the workspace's `private_mcps`. */
function remoteOf(config: Config, name: string) {
  const mcp = config.privateMcps[name];
  if (!mcp || mcp.type !== "http" || !mcp.proxyTo) {
    const remotes = Object.entries(config.privateMcps).filter(([, m]) => m.type === "http")
      .map(([n]) => n);
    throw new PmlError(
      "UNKNOWN_SERVER",
      `"${name}" is no remote server of private_mcps in ${config.configPath} (remote servers: ${
        remotes.join(", ") || "none"
      })`,
    );
  }
  return { mcp, resource: mcp.proxyTo };
}

/** `pml auth NAME`. */
export async function runAuth(
  config: Config,
  io: CliIo,
  name: string,
  opts: AuthOptions,
): Promise<number> {
  const { mcp, resource } = remoteOf(config, name);
  const store = new SignInStore(config.pmlHome);
  const settings = oauthSettings(mcp, config.env);
  const redirect = new RedirectPage({
    warn: (line) => io.stderr(line + "\n"),
    fixed: settings.redirectUri,
  });
  const { auth, extractWWWAuthenticateParams } = await loadClientAuth();
  let signedIn!: () => void;
  const done = new Promise<void>((resolve) => signedIn = resolve);
  const provider = new SignInProvider({
    server: name,
    resource,
    settings,
    store,
    redirect,
    fetch: opts.fetch,
    fresh: true, // a new consent (a wider scope, another account), not a refresh
    onLink: (link) => {
      io.stdout(
        `Sign in to ${name} (${resource}):\n  ${link.href}\n` +
          `(this command waits for the sign-in, up to ${
            SIGN_IN_TTL_MS / 60000
          } min; Ctrl-C stops)\n`,
      );
      if (opts.browser) (opts.openUrl ?? openInBrowser)(link.href);
    },
    onSignedIn: () => signedIn(),
  });
  try {
    // What the server asks (its challenge): where its metadata is, which scope.
    const record = await store.read(name, resource);
    const probe = await (opts.fetch ?? fetch)(resource, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "pml", version: "0" },
        },
      }),
      redirect: "manual",
    }).catch((err) => {
      throw new PmlError(
        "REMOTE_UNREACHABLE",
        `Cannot reach ${name} (${resource}): ${errorMessage(err)}`,
      );
    });
    await probe.body?.cancel();
    const challenge = probe.status === 401 || probe.status === 403
      ? extractWWWAuthenticateParams(probe)
      : {};
    const scope = record?.waitingScope ?? challenge.scope;
    const result = await auth(provider, {
      serverUrl: resource,
      scope,
      resourceMetadataUrl: challenge.resourceMetadataUrl,
      fetchFn: opts.fetch,
    });
    if (result === "REDIRECT") await waitFor(done, opts.signal);
    if (opts.signal?.aborted) {
      io.stdout("Stopped: not signed in.\n");
      return 1;
    }
    const now = await store.read(name, resource);
    io.stdout(
      `Signed in to ${name}${now?.tokens?.scope ? ` (scope: ${now.tokens.scope})` : ""}. ` +
        `A waiting call goes on with pml__continue.\n`,
    );
    return 0;
  } finally {
    await redirect.close();
  }
}

/** `pml auth --list`. */
export async function runAuthList(config: Config, io: CliIo, json: boolean): Promise<number> {
  const list = (await new SignInStore(config.pmlHome).list()).map(summary);
  if (json) {
    io.stdout(JSON.stringify(list, null, 2) + "\n");
    return 0;
  }
  if (list.length === 0) {
    io.stdout("No remote server is signed in.\n");
    return 0;
  }
  for (const s of list) {
    const state = s.signedIn
      ? `signed in${s.scope ? ` (scope: ${s.scope})` : ""}${
        s.expiresAt ? `, token expires ${new Date(s.expiresAt).toISOString()}` : ""
      }${s.refreshable ? ", refreshable" : ""}`
      : "not signed in";
    const waiting = s.waitingSince
      ? `; waits for you to sign in since ${new Date(s.waitingSince).toISOString()}`
      : "";
    io.stdout(`${q(s.server)}  ${q(s.resource)}  ${q(state)}${waiting}\n`);
  }
  return 0;
}

/** `pml auth --logout NAME`: revoked where the server offers it, then forgotten. */
export async function runAuthLogout(
  config: Config,
  io: CliIo,
  name: string,
  opts: { fetch?: typeof fetch } = {},
): Promise<number> {
  const { mcp, resource } = remoteOf(config, name);
  const store = new SignInStore(config.pmlHome);
  const record = await store.read(name, resource);
  if (!record) {
    io.stdout(`${name} was not signed in.\n`);
    return 0;
  }
  // OIDC discovery documents may leave it out of their type; RFC 8414 metadata names it.
  const metadata = record.discoveryState?.authorizationServerMetadata as
    | { revocation_endpoint?: string }
    | undefined;
  const endpoint = metadata?.revocation_endpoint;
  let revoked = "the server offers no revocation; its tokens were forgotten here";
  if (endpoint && record.tokens) {
    checkSignInUrl(name, new URL(endpoint), "the revocation");
    const settings = oauthSettings(mcp, config.env);
    const clientId = settings.clientId ?? record.clientInformation?.client_id;
    const secret = settings.clientSecret ?? record.clientInformation?.client_secret;
    const failed: string[] = [];
    for (
      const [token, hint] of [
        [record.tokens.refresh_token, "refresh_token"],
        [record.tokens.access_token, "access_token"],
      ] as const
    ) {
      if (!token) continue;
      const body = new URLSearchParams({ token, token_type_hint: hint });
      const headers: Record<string, string> = {
        "content-type": "application/x-www-form-urlencoded",
      };
      if (secret && clientId) headers.authorization = `Basic ${btoa(`${clientId}:${secret}`)}`;
      else if (clientId) body.set("client_id", clientId);
      const res = await (opts.fetch ?? fetch)(endpoint, { method: "POST", headers, body })
        .catch(() => undefined);
      await res?.body?.cancel();
      if (!res?.ok) failed.push(hint);
    }
    revoked = failed.length === 0
      ? "revoked at its authorization server"
      : `its authorization server did not confirm the revocation of the ${failed.join(" and ")}; ` +
        `the tokens were forgotten here`;
  }
  await store.remove(name, resource);
  io.stdout(`Signed out of ${name}: ${revoked}.\n`);
  return 0;
}

function waitFor(done: Promise<void>, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new PmlError("SIGN_IN_TIMEOUT", "No sign-in came back in time")),
      SIGN_IN_TTL_MS,
    );
    const stop = () => {
      clearTimeout(timer);
      resolve();
    };
    signal?.addEventListener("abort", stop, { once: true });
    done.then(stop);
  });
}

/** `xdg-open URL` (Linux) or `open URL` (macOS); nothing when neither is there. */
function openInBrowser(url: string): void {
  spawnDetached(Deno.build.os === "darwin" ? "open" : "xdg-open", [url]);
}
