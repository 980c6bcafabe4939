/**
 * PML's `OAuthClientProvider` for one remote server (the MCP SDK's client auth runs the flow:
 * discovery, registration, PKCE, the code exchange, refresh, step-up; this is only what it asks
 * of a client). What it keeps goes to the {@link SignInStore} (never a workspace); the link the
 * authorization server gives goes to `onLink`, which tells the human channels, never the agent.
 *
 * Registration, in the SDK's order: a client ID metadata document when the server supports it and
 * `.pml.json` names one (`oauth.clientMetadataUrl`), a pre-registered client
 * (`oauth.clientId`/`oauth.clientSecret`, templates of variables as headers are), else dynamic
 * registration with the redirect of this process (a stored registration whose redirect is not
 * this process's is registered anew).
 *
 * @module
 */
import { PmlError } from "../errors.ts";
import { isLoopbackHost } from "../config/secure_url.ts";
import { loadClientAuth } from "../sdk/load_http_client.ts";
import type { OAuthClientProvider, OAuthDiscoveryState } from "../sdk/client_auth.ts";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "../sdk/shared_auth.ts";
import type { RedirectPage } from "./redirect_page.ts";
import type { SignInStore } from "./sign_in_store.ts";

/** How long before its expiry an access token is refreshed. */
export const REFRESH_AHEAD_MS = 60_000;

/** `private_mcps.NAME.oauth` with its templates filled. */
export interface OAuthSettings {
  readonly clientId?: string;
  readonly clientSecret?: string;
  readonly clientMetadataUrl?: string;
  readonly scope?: string;
  /** A redirect URI registered beforehand with the client (loopback `http` with a port). */
  readonly redirectUri?: string;
}

/** What a {@link SignInProvider} needs. */
export interface SignInProviderDeps {
  readonly server: string;
  /** The MCP server's URL (the resource). */
  readonly resource: string;
  readonly settings: OAuthSettings;
  readonly store: SignInStore;
  readonly redirect: RedirectPage;
  /** Tells the human (stderr, `pml auth`, a notification): the link is theirs only. */
  readonly onLink: (link: URL) => Promise<void> | void;
  /** Told when tokens were saved (a sign-in or a refresh). */
  readonly onSignedIn?: () => Promise<void> | void;
  readonly fetch?: typeof fetch;
  readonly now?: () => number;
  /** Hide the stored tokens (`pml auth NAME`: a new consent, not a refresh). */
  readonly fresh?: boolean;
}

/**
 * Refuses a URL of the sign-in (the page the human's browser is sent to, the endpoint a token is
 * revoked at) that is not `https`, or plain `http` on this machine (RFC 8252 loopback servers,
 * the tests' servers): `what` names it in the error.
 */
export function checkSignInUrl(server: string, url: URL, what = "the sign-in"): void {
  if (url.protocol === "https:") return;
  if (url.protocol === "http:" && isLoopbackHost(url.hostname)) return;
  throw new PmlError(
    "SIGN_IN_UNSAFE_URL",
    `${server}: its authorization server sends ${what} to a ${url.protocol} URL off this ` +
      `machine ("${url.protocol}//${url.host}"); PML uses only https (or http on loopback)`,
    { details: { server } },
  );
}

/** See the module documentation. */
export class SignInProvider implements OAuthClientProvider {
  readonly #d: SignInProviderDeps;
  #verifier?: string;
  /** The scope a 403 `insufficient_scope` asked for, until a sign-in grants it. */
  #stepUp?: string;
  /** Set for the code exchange of one started flow: its verifier and client. */
  readonly #flow?: { verifier: string; client?: OAuthClientInformationMixed };

  constructor(
    deps: SignInProviderDeps,
    flow?: { verifier: string; client?: OAuthClientInformationMixed },
  ) {
    this.#d = deps;
    this.#flow = flow;
  }

  get redirectUrl(): string {
    return this.#d.redirect.redirectUrl;
  }

  get clientMetadataUrl(): string | undefined {
    return this.#d.settings.clientMetadataUrl;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "PML",
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      ...(this.#d.settings.scope ? { scope: this.#d.settings.scope } : {}),
    };
  }

  state(): string {
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_")
      .replace(/=+$/, "");
  }

  async clientInformation(): Promise<OAuthClientInformationMixed | undefined> {
    if (this.#flow) return this.#flow.client;
    const { clientId, clientSecret } = this.#d.settings;
    if (clientId) {
      return { client_id: clientId, ...(clientSecret ? { client_secret: clientSecret } : {}) };
    }
    const stored = (await this.#record())?.clientInformation;
    const uris = (stored as { redirect_uris?: string[] } | undefined)?.redirect_uris;
    // Registered with another process's redirect: register this one.
    if (uris && uris.length > 0 && !uris.includes(this.redirectUrl)) return undefined;
    return stored;
  }

  async saveClientInformation(info: OAuthClientInformationMixed): Promise<void> {
    if (this.#d.settings.clientId) return; // pre-registered: its secret stays in the variable
    await this.#d.store.update(this.#d.server, this.#d.resource, (r) => ({
      ...r,
      clientInformation: info,
    }));
  }

  async tokens(): Promise<OAuthTokens | undefined> {
    if (this.#d.fresh) return undefined;
    const tokens = (await this.#record())?.tokens;
    if (!tokens || !this.#stepUp) return tokens;
    // A refresh keeps the scope: a step-up needs the user's consent, so the SDK is not offered it.
    const { refresh_token: _kept, ...rest } = tokens;
    return rest;
  }

  /**
   * Sees each response of the server (before the SDK's transport handles it): a 403
   * `insufficient_scope` means the next sign-in is a step-up to the scope it names.
   */
  observe(res: Response): void {
    if (res.status !== 403) return;
    const challenge = res.headers.get("www-authenticate") ?? "";
    if (!/error="?insufficient_scope/.test(challenge)) return;
    this.#stepUp = /scope="([^"]*)"/.exec(challenge)?.[1] ?? "";
  }

  async saveTokens(tokens: OAuthTokens): Promise<void> {
    const now = (this.#d.now ?? Date.now)();
    this.#stepUp = undefined;
    await this.#d.store.update(this.#d.server, this.#d.resource, (r) => ({
      ...r,
      tokens,
      tokensSavedAt: now,
      waitingSince: undefined,
      waitingScope: undefined,
    }));
    await this.#d.onSignedIn?.();
  }

  async redirectToAuthorization(url: URL): Promise<void> {
    checkSignInUrl(this.#d.server, url);
    const state = url.searchParams.get("state");
    if (!state || !this.#verifier) {
      throw new PmlError("SIGN_IN_FAILED", `${this.#d.server}: the sign-in has no state`);
    }
    const flow = { verifier: this.#verifier, client: await this.clientInformation() };
    const record = await this.#record();
    const discovery = record?.discoveryState;
    const issuer = discovery?.authorizationServerMetadata?.issuer ??
      discovery?.authorizationServerUrl;
    this.#d.redirect.expect(state, {
      server: this.#d.server,
      issuer,
      finish: (code) => this.#finish(code, flow),
    });
    const now = (this.#d.now ?? Date.now)();
    await this.#d.store.update(this.#d.server, this.#d.resource, (r) => ({
      ...r,
      waitingSince: r.waitingSince ?? now,
      waitingScope: url.searchParams.get("scope") ?? undefined,
    }));
    await this.#d.onLink(url);
  }

  /**
   * Refreshes the tokens when the access token expires within {@link REFRESH_AHEAD_MS} and a
   * refresh token is held (the SDK's `auth`, which refreshes first): a call does not have to meet
   * a 401 first. Nothing happens otherwise; a refresh that fails is left to the next 401.
   */
  async refreshIfExpiring(): Promise<void> {
    const record = await this.#record();
    const tokens = record?.tokens;
    if (!tokens?.refresh_token || tokens.expires_in === undefined || !record?.tokensSavedAt) return;
    const now = (this.#d.now ?? Date.now)();
    if (record.tokensSavedAt + tokens.expires_in * 1000 - REFRESH_AHEAD_MS > now) return;
    const { refreshAuthorization } = await loadClientAuth();
    const discovery = record.discoveryState;
    const client = await this.clientInformation();
    if (!discovery?.authorizationServerUrl || !client) return;
    try {
      const fresh = await refreshAuthorization(discovery.authorizationServerUrl, {
        metadata: discovery.authorizationServerMetadata,
        clientInformation: client,
        refreshToken: tokens.refresh_token,
        resource: new URL(discovery.resourceMetadata?.resource ?? this.#d.resource),
        fetchFn: this.#d.fetch,
      });
      await this.saveTokens({
        ...fresh,
        issuer: tokens.issuer ?? discovery.authorizationServerUrl,
      });
    } catch {
      // Left to the server's 401, which the SDK's transport answers (a refresh, or a sign-in).
    }
  }

  saveCodeVerifier(verifier: string): void {
    this.#verifier = verifier;
  }

  codeVerifier(): string {
    const verifier = this.#flow?.verifier ?? this.#verifier;
    if (!verifier) throw new PmlError("SIGN_IN_FAILED", `${this.#d.server}: no sign-in started`);
    return verifier;
  }

  async invalidateCredentials(
    scope: "all" | "client" | "tokens" | "verifier" | "discovery",
  ): Promise<void> {
    if (scope === "verifier") return;
    await this.#d.store.update(this.#d.server, this.#d.resource, (r) => ({
      ...r,
      ...(scope === "all" || scope === "client" ? { clientInformation: undefined } : {}),
      ...(scope === "all" || scope === "tokens" ? { tokens: undefined } : {}),
      ...(scope === "all" || scope === "discovery" ? { discoveryState: undefined } : {}),
    }));
  }

  async saveDiscoveryState(state: OAuthDiscoveryState): Promise<void> {
    await this.#d.store.update(this.#d.server, this.#d.resource, (r) => ({
      ...r,
      discoveryState: state,
    }));
  }

  async discoveryState(): Promise<OAuthDiscoveryState | undefined> {
    return (await this.#record())?.discoveryState;
  }

  /** The redirect came back with `code`: exchange it (the SDK's `auth` with the flow's verifier). */
  async #finish(
    code: string,
    flow: { verifier: string; client?: OAuthClientInformationMixed },
  ): Promise<void> {
    const { auth } = await loadClientAuth();
    const exchange = new SignInProvider({ ...this.#d, fresh: false }, flow);
    const result = await auth(exchange, {
      serverUrl: this.#d.resource,
      authorizationCode: code,
      fetchFn: this.#d.fetch,
    });
    if (result !== "AUTHORIZED") {
      throw new PmlError("SIGN_IN_FAILED", `${this.#d.server}: the code was not exchanged`);
    }
  }

  #record() {
    return this.#d.store.read(this.#d.server, this.#d.resource);
  }
}
