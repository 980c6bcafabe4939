/**
 * The loopback redirect of a sign-in (RFC 8252 §7.3): where the authorization server sends the
 * human's browser back with the code. Like the approval page (`gateway/approval_page.ts`) it
 * binds its own random `127.x.y.z`, so no other local server shares its host, and answers only
 * requests that name that exact `host:port` (421 for any other `Host`: DNS rebinding).
 *
 * Each sign-in it expects is keyed by its `state`, used once: a replayed, foreign or unknown
 * `state` is refused and nothing is exchanged. A callback whose `iss` (RFC 9207) is not the
 * authorization server the flow started with is refused too (a mix-up). The page the browser
 * gets says which server is signed in, never a code or a token.
 *
 * @module
 */
import { randomLoopback, serveOwnLoopback } from "../gateway/own_loopback.ts";
import { errorMessage, PmlError } from "../errors.ts";
import { isLoopbackHost } from "../config/secure_url.ts";

/** How long a sign-in link may wait for the human. */
export const SIGN_IN_TTL_MS = 10 * 60 * 1000;

/** A sign-in that waits for its redirect. */
export interface ExpectedRedirect {
  readonly server: string;
  /** The authorization server the flow started with (`iss` must match when sent). */
  readonly issuer?: string;
  /** Exchanges the code (and saves the tokens). */
  readonly finish: (code: string) => Promise<void>;
}

/** See the module documentation. */
export class RedirectPage {
  #server?: Deno.HttpServer<Deno.NetAddr>;
  #host = "127.0.0.1";
  #port = 0;
  readonly #expected = new Map<string, ExpectedRedirect & { expiresAt: number }>();
  readonly #address: () => string;
  readonly #warn: (line: string) => void;
  readonly #now: () => number;
  /** A redirect URI registered beforehand (`oauth.redirectUri`): its host, port and path. */
  readonly #fixed?: URL;

  /**
   * `fixed`: the page answers exactly that loopback URI (a pre-registered client's), instead of
   * a random `127.x.y.z` and port; it must be `http` on loopback with a port.
   */
  constructor(
    opts: {
      address?: () => string;
      warn?: (line: string) => void;
      now?: () => number;
      fixed?: string;
    } = {},
  ) {
    this.#address = opts.address ?? randomLoopback;
    this.#warn = opts.warn ?? ((line) => console.error(line));
    this.#now = opts.now ?? Date.now;
    if (opts.fixed !== undefined) this.#fixed = loopbackUri(opts.fixed);
  }

  /** `http://127.x.y.z:PORT/callback`, or the fixed URI (starting the page if needed). */
  get redirectUrl(): string {
    this.#start();
    return this.#fixed?.href ?? `http://${this.#host}:${this.#port}/callback`;
  }

  /** Waits for the redirect that carries `state`, once. */
  expect(state: string, redirect: ExpectedRedirect): void {
    const now = this.#now();
    for (const [s, e] of this.#expected) if (e.expiresAt <= now) this.#expected.delete(s);
    this.#expected.set(state, { ...redirect, expiresAt: now + SIGN_IN_TTL_MS });
  }

  /** True while the sign-in of `state` waits for its redirect (not used, not expired). */
  isExpected(state: string): boolean {
    const e = this.#expected.get(state);
    return e !== undefined && e.expiresAt > this.#now();
  }

  async close(): Promise<void> {
    await this.#server?.shutdown();
    this.#server = undefined;
  }

  #start(): void {
    if (this.#server) return;
    const fixed = this.#fixed;
    if (fixed) {
      const hostname = fixed.hostname === "localhost"
        ? "127.0.0.1"
        : fixed.hostname.replace(/^\[|\]$/g, "");
      try {
        this.#server = Deno.serve(
          { hostname, port: Number(fixed.port), onListen: () => {} },
          (req) => this.#handle(req),
        );
      } catch (err) {
        throw new PmlError(
          "SIGN_IN_FAILED",
          `Cannot serve the sign-in redirect ${fixed.href} (oauth.redirectUri): ${
            errorMessage(err)
          }`,
        );
      }
      this.#server.unref();
      return;
    }
    this.#server = serveOwnLoopback((req) => this.#handle(req), {
      address: this.#address,
      warn: this.#warn,
      fallback: (wanted, error) =>
        `pml: the sign-in redirect cannot bind ${wanted} (${error}); it uses 127.0.0.1`,
    });
    this.#host = this.#server.addr.hostname;
    this.#port = this.#server.addr.port;
  }

  async #handle(req: Request): Promise<Response> {
    const host = req.headers.get("host");
    const own = this.#fixed?.host ?? `${this.#host}:${this.#port}`;
    if (host !== own) return page(421, "Wrong host", `This page answers only ${own}.`);
    const url = new URL(req.url);
    if (req.method !== "GET" || url.pathname !== (this.#fixed?.pathname ?? "/callback")) {
      return page(404, "Not found", "Nothing here.");
    }
    const state = url.searchParams.get("state") ?? "";
    const expected = this.#expected.get(state);
    this.#expected.delete(state);
    if (!expected || expected.expiresAt <= this.#now()) {
      return page(
        400,
        "Unknown sign-in",
        "This sign-in is unknown, expired or was used already. Run `pml auth NAME` for a new one.",
      );
    }
    const who = expected.server;
    const error = url.searchParams.get("error");
    if (error) {
      const why = url.searchParams.get("error_description");
      return page(400, "Sign-in refused", `${who}: ${error}${why ? ` (${why})` : ""}`);
    }
    const iss = url.searchParams.get("iss");
    if (iss !== null && expected.issuer !== undefined && !sameIssuer(iss, expected.issuer)) {
      return page(
        400,
        "Sign-in refused",
        `${who}: the answer came from ${iss}, not from ${expected.issuer}, where this sign-in ` +
          `started (a mix-up); nothing was exchanged.`,
      );
    }
    const code = url.searchParams.get("code");
    if (!code) return page(400, "Sign-in failed", `${who}: the answer carried no code.`);
    try {
      await expected.finish(code);
    } catch (err) {
      return page(502, "Sign-in failed", `${who}: ${errorMessage(err)}`);
    }
    return page(200, "Signed in", `${who} is signed in. You can close this tab.`);
  }
}

/** `uri` if it is an `http` loopback URI with a port (RFC 8252 §7.3), else a config error. */
function loopbackUri(uri: string): URL {
  const url = URL.canParse(uri) ? new URL(uri) : undefined;
  if (!url || url.protocol !== "http:" || !isLoopbackHost(url.hostname) || !url.port) {
    throw new PmlError(
      "CONFIG_INVALID",
      `oauth.redirectUri "${uri}" must be an http URI on loopback with a port ` +
        `(such as "http://127.0.0.1:33418/callback"): PML serves it itself`,
    );
  }
  return url;
}

/** Two issuer identifiers, compared as URLs (a trailing slash aside). */
function sameIssuer(a: string, b: string): boolean {
  const norm = (s: string) => {
    try {
      return new URL(s).href.replace(/\/$/, "");
    } catch {
      return s;
    }
  };
  return norm(a) === norm(b);
}

function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function page(status: number, title: string, body: string): Response {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8">` +
    `<title>PML: ${esc(title)}</title></head><body style="font:15px system-ui,sans-serif;` +
    `margin:2rem"><h1>${esc(title)}</h1><p>${esc(body)}</p></body></html>\n`;
  return new Response(html, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
      "x-frame-options": "DENY",
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
    },
  });
}
