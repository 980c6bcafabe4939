import { isPmlError } from "../errors.ts";
import type { ApprovalDecision } from "../permission/approvals.ts";
import type { ApprovalStore, StoredApproval } from "../permission/approval_store.ts";
import { ApprovalLink } from "../permission/human_channel.ts";
import { approvalCard, CARD_STYLE, esc } from "./approval_card.ts";
import { randomLoopback, serveOwnLoopback } from "./own_loopback.ts";

/** How long a one-time link may wait for its first (and only) use. */
const LINK_TTL_MS = 10 * 60 * 1000;
const DECISIONS: readonly ApprovalDecision[] = ["yes", "always", "no"];

/**
 * The local approval page (docs/approvals.md): the pending approvals of the workspace, with Yes /
 * Always / No. Started on first use.
 *
 * - Its own loopback address: a random `127.x.y.z` (Linux routes all of 127/8 to `lo`), bound and
 *   checked exactly, so that the browser's cookie for that host is never sent to another server on
 *   `127.0.0.1` (browsers scope cookies by host, not port). Where only `127.0.0.1` can be bound
 *   (macOS), the page falls back to it and says so on stderr.
 * - Each link carries a one-time token and goes only to human channels ({@link ApprovalLink}):
 *   its first use sets a session cookie (HttpOnly, SameSite=Strict) and redirects to the page; a
 *   used or unknown token gets 403.
 * - DNS rebinding: every request must name the page's exact `host:port` as `Host` (421 else).
 * - CSRF: a decision is a POST with the session cookie, the session's form token and an `Origin`
 *   equal to the page's own.
 * - No framework, no network: one HTML page, a small inline script (nonce CSP) that reloads it
 *   when the list changes, and a `<noscript>` refresh.
 */
export class ApprovalPage {
  readonly #store: ApprovalStore;
  readonly #workspace: string;
  #server?: Deno.HttpServer<Deno.NetAddr>;
  #host = "127.0.0.1";
  #port = 0;
  readonly #links = new Map<string, number>();
  /** session cookie → form (CSRF) token */
  readonly #sessions = new Map<string, string>();

  readonly #why: (approval: StoredApproval) => string;

  readonly #address: () => string;
  readonly #warn: (line: string) => void;
  readonly #decideAs: (id: string, decision: ApprovalDecision) => Promise<unknown>;

  /**
   * `why` names the rule that asked (shown after the question); `address` picks the loopback
   * address to bind (default: a random `127.x.y.z`); `warn` hears the fallback to `127.0.0.1`;
   * `decide` records a decision (default: in the store alone; `pml` passes `decideAsHuman`, which
   * also audits it and applies "always").
   */
  constructor(
    store: ApprovalStore,
    workspace: string,
    opts: {
      why?: (approval: StoredApproval) => string;
      address?: () => string;
      warn?: (line: string) => void;
      decide?: (id: string, decision: ApprovalDecision) => Promise<unknown>;
    } = {},
  ) {
    this.#store = store;
    this.#workspace = workspace;
    this.#why = opts.why ?? (() => "");
    this.#address = opts.address ?? randomLoopback;
    this.#warn = opts.warn ?? ((line) => console.error(line));
    this.#decideAs = opts.decide ?? ((id, decision) => store.decide(id, decision, "page"));
  }

  /** A fresh one-time link to the page (starting it if needed), for a human channel only. */
  link(): ApprovalLink {
    this.#start();
    const token = randomToken();
    this.#links.set(token, Date.now() + LINK_TTL_MS);
    return new ApprovalLink(`${this.origin}/?token=${token}`);
  }

  /** `http://127.x.y.z:PORT`: the page's own origin (not a secret; the tokens are). */
  get origin(): string {
    return `http://${this.#host}:${this.#port}`;
  }

  async close(): Promise<void> {
    await this.#server?.shutdown();
    this.#server = undefined;
  }

  #start(): void {
    if (this.#server) return;
    // Only 127.0.0.1 is configured here (macOS): a server on another port of it would be sent
    // the page's cookie.
    this.#server = serveOwnLoopback((req) => this.#handle(req), {
      address: this.#address,
      warn: this.#warn,
      fallback: (wanted, error) =>
        `pml: the approval page cannot bind ${wanted} (${error}); it uses ` +
        `127.0.0.1, where other local servers can receive its cookie (docs/approvals.md)`,
    });
    this.#host = this.#server.addr.hostname;
    this.#port = this.#server.addr.port;
  }

  async #handle(req: Request): Promise<Response> {
    const host = req.headers.get("host");
    if (host !== `${this.#host}:${this.#port}`) {
      return text(
        421,
        `Wrong Host "${host ?? ""}": the approval page answers only ${this.#host}:${this.#port}`,
      );
    }
    const url = new URL(req.url);
    const token = url.searchParams.get("token");
    if (req.method === "GET" && url.pathname === "/" && token !== null) return this.#enter(token);
    const session = this.#session(req);
    if (!session) {
      return text(403, "Forbidden: open the link pml printed (each link works once)");
    }
    if (req.method === "GET" && url.pathname === "/") return await this.#page(session);
    if (req.method === "GET" && url.pathname === "/version") {
      return text(200, await this.#version());
    }
    if (req.method === "POST" && url.pathname === "/decide") {
      return await this.#decide(req, session);
    }
    return text(404, "Not found");
  }

  /** A one-time link: trade it for a session cookie, once. */
  #enter(token: string): Response {
    const until = this.#links.get(token);
    this.#links.delete(token);
    if (until === undefined || until < Date.now()) {
      return text(403, "Forbidden: this link is unknown or was used already; open the latest link");
    }
    const session = randomToken();
    this.#sessions.set(session, randomToken());
    return new Response(null, {
      status: 303,
      headers: {
        location: "/",
        "set-cookie": `${this.#cookie}=${session}; HttpOnly; SameSite=Strict; Path=/`,
        "cache-control": "no-store",
        "referrer-policy": "no-referrer",
      },
    });
  }

  get #cookie(): string {
    return "pml_approvals";
  }

  #session(req: Request): string | undefined {
    const cookies = req.headers.get("cookie") ?? "";
    for (const part of cookies.split(";")) {
      const [name, value] = part.trim().split("=");
      if (name === this.#cookie && value && this.#sessions.has(value)) return value;
    }
    return undefined;
  }

  async #decide(req: Request, session: string): Promise<Response> {
    if (req.headers.get("origin") !== this.origin) {
      return text(403, "Forbidden: cross-origin request");
    }
    const form = await req.formData().catch(() => undefined);
    const id = form?.get("id");
    const decision = form?.get("decision");
    if (form?.get("csrf") !== this.#sessions.get(session)) {
      return text(403, "Forbidden: missing or wrong form token");
    }
    if (typeof id !== "string" || !DECISIONS.includes(decision as ApprovalDecision)) {
      return text(400, 'Bad request: needs "id" and "decision" (yes, always, no)');
    }
    try {
      await this.#decideAs(id, decision as ApprovalDecision);
    } catch (err) {
      if (!isPmlError(err)) throw err;
      return text(409, err.message);
    }
    return new Response(null, { status: 303, headers: { location: "/" } });
  }

  async #version(): Promise<string> {
    const list = await this.#store.list();
    return list.map((a) => `${a.id}:${a.decided?.decision ?? ""}`).join(",");
  }

  async #page(session: string): Promise<Response> {
    const list = await this.#store.list();
    const csrf = this.#sessions.get(session)!;
    const nonce = randomToken();
    const version = await this.#version();
    const body = list.length === 0
      ? `<p id="empty">No approval is waiting.</p>`
      : list.map((a) => approvalCard(a, csrf, this.#why(a))).join("\n");
    const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>PML approvals (${list.filter((a) => !a.decided).length})</title>
<noscript><meta http-equiv="refresh" content="5"></noscript>
<style>
body{font:15px/1.4 system-ui,sans-serif;margin:1.5rem auto;max-width:60rem;padding:0 1rem;color:#111}
${CARD_STYLE}
</style></head><body>
<h1>Approvals for <code>${esc(this.#workspace)}</code></h1>
${body}
<script nonce="${nonce}">
(function(){var v=${JSON.stringify(version)},sent=false;
document.addEventListener("submit",function(){sent=true});
setInterval(function(){if(sent)return;
fetch("/version",{credentials:"same-origin"}).then(function(r){return r.text()})
.then(function(t){if(t!==v&&!sent)location.reload()}).catch(function(){})},1500)})();
</script>
</body></html>`;
    return new Response(html, {
      headers: {
        "content-type": "text/html; charset=utf-8",
        "cache-control": "no-store",
        // Not no-referrer: with it, Chromium sends `Origin: null` on the page's own form posts.
        "referrer-policy": "same-origin",
        "x-frame-options": "DENY",
        "content-security-policy": `default-src 'none'; style-src 'unsafe-inline'; ` +
          `script-src 'nonce-${nonce}'; connect-src 'self'; form-action 'self'; ` +
          `frame-ancestors 'none'; base-uri 'none'`,
      },
    });
  }
}

function text(status: number, body: string): Response {
  return new Response(body + "\n", {
    status,
    headers: { "content-type": "text/plain; charset=utf-8", "cache-control": "no-store" },
  });
}

function randomToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
