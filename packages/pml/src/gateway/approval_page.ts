import { isPmlError } from "../errors.ts";
import type { ApprovalDecision } from "../permission/approvals.ts";
import type { ApprovalStore, StoredApproval } from "../permission/approval_store.ts";

/** How long a one-time link may wait for its first (and only) use. */
const LINK_TTL_MS = 10 * 60 * 1000;
const DECISIONS: readonly ApprovalDecision[] = ["yes", "always", "no"];

/**
 * The local approval page (docs/approvals.md): the pending approvals of the workspace, with Yes /
 * Always / No, served on `127.0.0.1` on a random port. Started on first use.
 *
 * - Each link `pml` hands out carries a one-time token: its first use sets a session cookie
 *   (HttpOnly, SameSite=Strict, named after the port) and redirects to the page; a used or unknown
 *   token gets 403.
 * - DNS rebinding: every request must name `127.0.0.1:PORT` or `localhost:PORT` as `Host`.
 * - CSRF: a decision is a POST with the session cookie, the session's form token and an `Origin`
 *   equal to the page's own.
 * - No framework, no network: one HTML page, a small inline script (nonce CSP) that reloads it
 *   when the list changes, and a `<noscript>` refresh.
 */
export class ApprovalPage {
  readonly #store: ApprovalStore;
  readonly #workspace: string;
  #server?: Deno.HttpServer<Deno.NetAddr>;
  #port = 0;
  readonly #links = new Map<string, number>();
  /** session cookie → form (CSRF) token */
  readonly #sessions = new Map<string, string>();

  readonly #why: (approval: StoredApproval) => string;

  /** `why` names the rule that asked (shown after the question). */
  constructor(
    store: ApprovalStore,
    workspace: string,
    why: (approval: StoredApproval) => string = () => "",
  ) {
    this.#store = store;
    this.#workspace = workspace;
    this.#why = why;
  }

  /** A fresh one-time link to the page (starting it if needed). */
  link(): Promise<string> {
    this.#start();
    const token = randomToken();
    this.#links.set(token, Date.now() + LINK_TTL_MS);
    return Promise.resolve(`${this.origin}/?token=${token}`);
  }

  get origin(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  async close(): Promise<void> {
    await this.#server?.shutdown();
    this.#server = undefined;
  }

  #start(): void {
    if (this.#server) return;
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#handle(req),
    );
    this.#port = this.#server.addr.port;
    // The page must not keep a finished `pml` alive.
    this.#server.unref();
  }

  async #handle(req: Request): Promise<Response> {
    const host = req.headers.get("host");
    if (host !== `127.0.0.1:${this.#port}` && host !== `localhost:${this.#port}`) {
      return text(421, "Wrong Host: the approval page answers only 127.0.0.1 and localhost");
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
    return `pml_approvals_${this.#port}`;
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
      await this.#store.decide(id, decision as ApprovalDecision, "page");
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
      : list.map((a) => card(a, csrf, this.#why(a))).join("\n");
    const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>PML approvals (${list.filter((a) => !a.decided).length})</title>
<noscript><meta http-equiv="refresh" content="5"></noscript>
<style>
body{font:15px/1.4 system-ui,sans-serif;margin:1.5rem auto;max-width:60rem;padding:0 1rem;color:#111}
.approval{border:1px solid #bbb;border-radius:6px;padding:0.8rem 1rem;margin:1rem 0}
h2{font-size:1.1rem;margin:0 0 .5rem}
dt{font-weight:600}dd{margin:0 0 .5rem 1rem}
pre{background:#f4f4f4;padding:.5rem;overflow:auto;max-height:24rem;margin:0}
.del{color:#a00}.add{color:#060}
button{font-size:1rem;margin-right:.5rem;padding:.3rem 1rem}
</style></head><body>
<h1>Approvals for <code>${esc(this.#workspace)}</code></h1>
${body}
<script nonce="${nonce}">
(function(){var v=${JSON.stringify(version)};setInterval(function(){
fetch("/version",{credentials:"same-origin"}).then(function(r){return r.text()})
.then(function(t){if(t!==v)location.reload()}).catch(function(){})},1500)})();
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

/** One pending approval: what, with what, where, why, and the three answers. */
function card(
  a: StoredApproval & { decided?: { decision: string } },
  csrf: string,
  why: string,
): string {
  const tool = String(a.context.tool ?? a.type);
  const args = (a.context.arguments ?? {}) as Record<string, unknown>;
  const where = a.context.routing === "server"
    ? "on the PML server"
    : `on this machine, in the workspace sandbox`;
  const details: string[] = [];
  if (typeof args.path === "string") details.push(field("Path", "path", esc(args.path)));
  for (const key of ["source", "destination"]) {
    if (typeof args[key] === "string") details.push(field(key, key, esc(args[key] as string)));
  }
  if (typeof args.command === "string") {
    const argv = Array.isArray(args.args) ? " " + (args.args as unknown[]).join(" ") : "";
    details.push(field("Command", "command", `<pre>${esc(args.command + argv)}</pre>`));
  }
  if (Array.isArray(args.edits)) details.push(field("Diff", "diff", diff(args.edits)));
  else if (typeof args.content === "string") {
    details.push(field("Content", "content", `<pre>${esc(clip(args.content))}</pre>`));
  }
  const answer = a.decided
    ? `<p data-field="decided">Decided: <strong>${
      esc(a.decided.decision)
    }</strong>; the agent gets the result with pml:continue.</p>`
    : `<form method="post" action="/decide">
<input type="hidden" name="id" value="${
      esc(a.id)
    }"><input type="hidden" name="csrf" value="${csrf}">
<button name="decision" value="yes">Yes</button><button name="decision" value="always">Always</button><button name="decision" value="no">No</button>
</form>`;
  return `<section class="approval" id="a-${esc(a.id)}" data-id="${esc(a.id)}">
<h2 data-field="tool">${esc(tool)}</h2>
<dl>
${details.join("\n")}
${field("Where it runs", "where", esc(where))}
${field("Why it is asked", "why", esc(why ? `${a.description} ${why}` : a.description))}
${
    a.forHuman
      ? field("What changed", "difference", `<pre>${esc(clip(a.forHuman.description))}</pre>`)
      : ""
  }
${field("Arguments", "arguments", `<pre>${esc(clip(JSON.stringify(args, null, 2)))}</pre>`)}
${field("Expires", "expires", esc(new Date(a.expiresAt).toISOString()))}
</dl>
${answer}
</section>`;
}

function field(label: string, name: string, html: string): string {
  return `<dt>${esc(label)}</dt><dd data-field="${name}">${html}</dd>`;
}

/** `filesystem:edit_file` edits as a diff: removed lines, then added lines, per edit. */
function diff(edits: unknown[]): string {
  const lines: string[] = [];
  for (const e of edits) {
    const { oldText, newText } = (e ?? {}) as { oldText?: unknown; newText?: unknown };
    for (const l of String(oldText ?? "").split("\n")) {
      lines.push(`<span class="del">- ${esc(l)}</span>`);
    }
    for (const l of String(newText ?? "").split("\n")) {
      lines.push(`<span class="add">+ ${esc(l)}</span>`);
    }
  }
  return `<pre>${lines.join("\n")}</pre>`;
}

function clip(s: string): string {
  return s.length > 20_000 ? `${s.slice(0, 20_000)}\n… (${s.length} characters)` : s;
}

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
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
