/**
 * Sign-in for the remote servers of `private_mcps` in a running gateway (docs/security.md,
 * "Sign-in tokens"): one {@link SignInProvider} per server that has no static `Authorization`
 * header, one loopback {@link RedirectPage} for the process, and the calls that wait for their
 * user.
 *
 * The consent is the human's: the link goes to `pml`'s stderr and, when enabled, a desktop
 * notification; the agent is told that the server waits for its user and how
 * (`pml auth NAME`), never the link. Its call then waits like a human approval: the result is
 * `waiting_for_human` with a workflow id, and `pml:continue` runs the call once the user signed in
 * (here, through the printed link, or with `pml auth NAME` in another process: the store is the
 * one truth), or says it still waits.
 *
 * @module
 */
import type { AuditLog } from "../audit/audit.ts";
import type { PrivateMcp } from "../config/schema.ts";
import { redactSecrets } from "../redact_secrets.ts";
import type { CallToolResult } from "../sdk/types.ts";
import type { OpenUrl } from "../targets/target.ts";
import { fillHeader } from "../targets/remote/remote_session.ts";
import { RedirectPage, SIGN_IN_TTL_MS } from "./redirect_page.ts";
import { type OAuthSettings, SignInProvider } from "./sign_in_provider.ts";
import { SignInStore } from "./sign_in_store.ts";

/** What a {@link RemoteSignIn} needs. */
export interface RemoteSignInDeps {
  readonly mcps: Readonly<Record<string, PrivateMcp>>;
  readonly env: Readonly<Record<string, string>>;
  readonly pmlHome: string;
  /** `pml`'s stderr. */
  readonly tell: (line: string) => void;
  /** A desktop notification (when `.pml.json` enables it). */
  readonly notify?: (title: string, body: string) => void;
  readonly audit?: AuditLog;
  readonly fetch?: typeof fetch;
  readonly now?: () => number;
  /** Told when a server's user signed in (here): its tools can be listed now. */
  readonly onSignedIn?: (server: string) => void;
  /** Picks the redirect page's loopback address (tests). */
  readonly address?: () => string;
}

/** How many sign-ins in a row a server may ask for, each right after the last (a bounded retry). */
export const MAX_SIGN_INS = 3;

/** How often a call shown to the user through URL elicitation looks whether they signed in. */
const POLL_MS = 250;

/** The result of a call that waits for its user to sign in. */
export interface WaitingForSignIn {
  status: "waiting_for_human";
  workflow_id: string;
  reason: "sign_in";
  server: string;
  message: string;
}

interface Waiting {
  readonly server: string;
  readonly resource: string;
  readonly resume: () => Promise<CallToolResult>;
  readonly expiresAt: number;
}

/** `private_mcps.NAME.oauth` as written (values may be `{VAR}` templates). */
export function oauthSettings(
  mcp: PrivateMcp | undefined,
  env: Readonly<Record<string, string>>,
): OAuthSettings {
  const raw: Record<string, string | undefined> = mcp?.oauth ?? {};
  const names = mcp?.envRequired ?? [];
  const settings: Record<string, string> = {};
  for (const key of ["clientId", "clientSecret", "clientMetadataUrl", "scope", "redirectUri"]) {
    const value = raw[key] === undefined ? undefined : fillHeader(raw[key], names, env);
    if (value) settings[key] = value;
  }
  return settings;
}

/** See the module documentation. */
export class RemoteSignIn {
  readonly #d: RemoteSignInDeps;
  readonly store: SignInStore;
  readonly #redirect: RedirectPage;
  readonly #fixedPages: RedirectPage[] = [];
  readonly #providers = new Map<string, SignInProvider>();
  readonly #waiting = new Map<string, Waiting>();
  /** The last link of each server, for reminders (the human's only). */
  readonly #links = new Map<string, { url: URL; at: number }>();
  /** Per server: sign-ins the server asked for again right after one, and when it last asked. */
  readonly #rounds = new Map<string, { again: number; at: number }>();
  /** Secrets a message about a server must not carry (its tokens, its client secret). */
  readonly #secrets = new Map<string, Set<string>>();

  constructor(deps: RemoteSignInDeps) {
    this.#d = deps;
    this.store = new SignInStore(deps.pmlHome);
    this.#redirect = new RedirectPage({ address: deps.address, warn: deps.tell, now: deps.now });
  }

  /**
   * The provider of `server` at `resource`, or `undefined` when its headers carry their own
   * `Authorization` (a static token from a variable: no sign-in).
   */
  providerFor(
    server: string,
    resource: string,
    headers: Readonly<Record<string, string>>,
  ): SignInProvider | undefined {
    if (Object.keys(headers).some((h) => h.toLowerCase() === "authorization")) return undefined;
    let provider = this.#providers.get(server);
    if (!provider) {
      const settings = oauthSettings(this.#d.mcps[server], this.#d.env);
      if (settings.clientSecret) this.#secret(server, settings.clientSecret);
      provider = new SignInProvider({
        server,
        resource,
        settings,
        store: this.store,
        redirect: this.#redirectFor(settings),
        fetch: this.#d.fetch,
        now: this.#d.now,
        onLink: (link) => this.#announce(server, resource, link),
        onSignedIn: async () => {
          // A link was shown here: a sign-in (else a refresh, or a sign-in elsewhere).
          const announced = this.#links.delete(server);
          if (announced) this.#d.onSignedIn?.(server);
          await this.#d.audit?.write("sign_in", {
            server,
            resource,
            event: announced ? "signed_in" : "tokens_saved",
          });
        },
      });
      this.#providers.set(server, provider);
    }
    return provider;
  }

  /** Before a call: refreshes the tokens of `server` if they are about to expire. */
  async beforeCall(
    server: string,
    resource: string,
    headers: Readonly<Record<string, string>>,
  ): Promise<void> {
    await this.providerFor(server, resource, headers)?.refreshIfExpiring();
  }

  /** True while `server` waits for its user (a flow started here or elsewhere, not finished). */
  async isWaiting(server: string, resource: string): Promise<boolean> {
    return (await this.store.read(server, resource))?.waitingSince !== undefined;
  }

  /**
   * The call's result while `server` waits for its user: `waiting_for_human` with a workflow id
   * that `pml:continue` answers by running `resume` once the user signed in. A server that asks
   * again right after each sign-in (it refuses the tokens it issued) is asked at most
   * {@link MAX_SIGN_INS} times in a row; then the call fails, saying so.
   */
  async wait(
    server: string,
    resource: string,
    resume: () => Promise<CallToolResult>,
  ): Promise<CallToolResult> {
    const now = (this.#d.now ?? Date.now)();
    for (const [id, w] of this.#waiting) if (w.expiresAt <= now) this.#waiting.delete(id);
    const stop = await this.#tooMany(server, resource);
    if (stop) return stop;
    const id = crypto.randomUUID();
    this.#waiting.set(id, { server, resource, resume, expiresAt: now + SIGN_IN_TTL_MS });
    return waitingResult(id, server);
  }

  /**
   * Where the client elicits in URL mode: shows the user the sign-in link of `server` through it
   * (the client shows it to the user, never to the model) and, when they accept, waits for the
   * sign-in (here or with `pml auth`) and runs the call at once. `undefined` when there is no link
   * or the user did not accept: the call then waits as {@link wait} says.
   */
  async viaClient(
    server: string,
    resource: string,
    openUrl: OpenUrl,
    resume: () => Promise<CallToolResult>,
    signal?: AbortSignal,
  ): Promise<CallToolResult | undefined> {
    const link = this.#links.get(server)?.url;
    if (!link) return undefined;
    const stop = await this.#tooMany(server, resource);
    if (stop) return stop;
    const id = crypto.randomUUID();
    const answer = await openUrl.ask(
      link.href,
      `Sign in to ${server} (${resource}): PML waits for the sign-in, then runs the call.`,
      id,
    ).catch(() => "cancel" as const);
    if (answer !== "accept") return undefined;
    const until = Date.now() + SIGN_IN_TTL_MS;
    while (await this.isWaiting(server, resource)) {
      if (signal?.aborted || Date.now() > until) return undefined;
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    await openUrl.done(id).catch(() => {});
    return await resume();
  }

  /** A call to `server` went through: its count of sign-ins in a row starts again. */
  succeeded(server: string): void {
    this.#rounds.delete(server);
  }

  owns(workflowId: string): boolean {
    return this.#waiting.has(workflowId);
  }

  /** `pml:continue` of a sign-in wait: the call once signed in, else still waiting. */
  async continue(workflowId: string, decision: string): Promise<CallToolResult> {
    const w = this.#waiting.get(workflowId);
    if (!w) {
      return errorText(`No call waits for a sign-in under "${workflowId}"; call the tool again`);
    }
    if (decision === "no") {
      this.#waiting.delete(workflowId);
      return errorText(`Not run: the call to ${w.server} was given up (pml:continue "no")`);
    }
    if (await this.isWaiting(w.server, w.resource)) {
      const link = this.#links.get(w.server)?.url;
      this.#d.tell(
        `pml: ${w.server} still waits for you to sign in: ${
          link ? `open ${link.href}\n  or ` : ""
        }run \`pml auth ${w.server}\``,
      );
      return waitingResult(workflowId, w.server);
    }
    this.#waiting.delete(workflowId);
    return await w.resume();
  }

  /** `text` without the tokens and client secret PML holds for `server`. */
  async scrub(server: string, resource: string, text: string): Promise<string> {
    const record = await this.store.read(server, resource).catch(() => undefined);
    const client = record?.clientInformation as { client_secret?: string } | undefined;
    return redactSecrets(text, [
      ...(this.#secrets.get(server) ?? []),
      record?.tokens?.access_token ?? "",
      record?.tokens?.refresh_token ?? "",
      client?.client_secret ?? "",
    ]);
  }

  async close(): Promise<void> {
    await Promise.all([this.#redirect, ...this.#fixedPages].map((p) => p.close()));
  }

  /** The shared redirect page, or one of its own for a server with a registered redirect URI. */
  #redirectFor(settings: OAuthSettings): RedirectPage {
    if (!settings.redirectUri) return this.#redirect;
    const page = new RedirectPage({ fixed: settings.redirectUri, now: this.#d.now });
    this.#fixedPages.push(page);
    return page;
  }

  /**
   * Counts a sign-in `server` asks for right after the last one; past {@link MAX_SIGN_INS} in a
   * row, the error that ends the call.
   */
  async #tooMany(server: string, resource: string): Promise<CallToolResult | undefined> {
    const now = (this.#d.now ?? Date.now)();
    const savedAt = (await this.store.read(server, resource))?.tokensSavedAt ?? 0;
    const last = this.#rounds.get(server);
    const again = last && savedAt > last.at ? last.again + 1 : (last?.again ?? 0);
    this.#rounds.set(server, { again, at: now });
    if (again < MAX_SIGN_INS) return undefined;
    this.#rounds.delete(server);
    return errorText(
      `"${server}" asked its user to sign in again right after each of ${again} sign-ins (it ` +
        `refuses the tokens it issued, or asks for a scope it does not grant): PML stops ` +
        `asking for this call. Check the server, then \`pml auth ${server}\` and call again.`,
    );
  }

  async #announce(server: string, resource: string, link: URL): Promise<void> {
    // A link shown for the same scope whose state still waits on the redirect page still works:
    // the human is not told twice (a tools/list, then the call).
    const now = (this.#d.now ?? Date.now)();
    const shown = this.#links.get(server);
    const scope = (u: URL) => u.searchParams.get("scope");
    const state = shown?.url.searchParams.get("state");
    if (shown && state && this.#redirect.isExpected(state) && scope(shown.url) === scope(link)) {
      return;
    }
    this.#links.set(server, { url: link, at: now });
    this.#d.tell(
      `pml: ${server} (${resource}) asks you to sign in. Open\n  ${link.href}\n  or run ` +
        `\`pml auth ${server}\` in a terminal of this workspace.`,
    );
    this.#d.notify?.(`PML: sign in to ${server}`, `${link.href}\n(or: pml auth ${server})`);
    await this.#d.audit?.write("sign_in", { server, resource, event: "waiting_for_user" });
  }

  #secret(server: string, value: string): void {
    let set = this.#secrets.get(server);
    if (!set) this.#secrets.set(server, set = new Set());
    set.add(value);
  }
}

/** What the agent is told: the server waits for its user, and how the user signs in. No link. */
export function waitingResult(workflowId: string, server: string): CallToolResult {
  const body: WaitingForSignIn = {
    status: "waiting_for_human",
    workflow_id: workflowId,
    reason: "sign_in",
    server,
    message: `Not run yet: the remote MCP server "${server}" waits for its user to sign in ` +
      `(OAuth). The user signs in with \`pml auth ${server}\` in a terminal of this workspace ` +
      `(or through the link pml showed them). Then call pml__continue with workflow_id ` +
      `"${workflowId}" and decision "yes" to run the call. The agent cannot sign in.`,
  };
  return {
    content: [{ type: "text", text: JSON.stringify(body) }],
    structuredContent: body as unknown as Record<string, unknown>,
  };
}

function errorText(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}
