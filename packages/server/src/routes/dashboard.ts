/**
 * `GET /`: the server's read-only dashboard (epic 14, dual-server architecture): health, the
 * routing table, the catalogue and the API keys by prefix. One self-contained HTML page: no script,
 * no external asset, a strict Content-Security-Policy (only its own inline style, by hash), every
 * value HTML-escaped (descriptions of published capabilities are anyone's text). Whole keys are
 * never stored, so never shown; key labels are left out too (the page is as public as the registry).
 *
 * @module
 */
import { sha256Integrity } from "../registry/hash.ts";
import type { RoutingTable } from "../registry/routing_table.ts";
import type { ApiKeyRecord, EntrySummary, Store } from "../store/store.ts";
import { SERVER_VERSION } from "./health.ts";

/** Entries listed at most (the page says how many there are in all). */
export const DASHBOARD_MAX_ENTRIES = 500;

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1d1d1f; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #ddd; vertical-align: top; }
th { background: #f4f4f6; } code { font: 12px/1.4 ui-monospace, monospace; }
.ok { color: #137333; } .bad { color: #b3261e; } .muted { color: #666; }
`;

/** The page's Content-Security-Policy: nothing but its own inline style. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  `style-src '${sha256Integrity(STYLE)}'`,
  "img-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Renders the dashboard from the store and the routing table. */
export async function serveDashboard(store: Store, routing: RoutingTable): Promise<Response> {
  const [health, page, keys] = await Promise.all([
    store.ping().then(() => undefined, (err: Error) => err.message),
    store.listEntries({ offset: 0, limit: DASHBOARD_MAX_ENTRIES }).catch(() => undefined),
    store.listApiKeys().catch(() => undefined),
  ]);
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>pml-server</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>${STYLE}</style></head>
<body>
<h1>pml-server <span class="muted">${esc(SERVER_VERSION)}</span></h1>
<p class="muted">Read-only. Registry: <code>GET /mcp</code>, <code>GET /mcp/{fqdn}</code>; routing: <code>GET /api/routing</code>; MCP: <code>POST /mcp</code> with an API key.</p>
<h2>Health</h2>
<p id="health" class="${health === undefined ? "ok" : "bad"}">${
    health === undefined
      ? `ok: store ${esc(store.kind)} answers`
      : `error: store ${esc(store.kind)} does not answer (${esc(health)})`
  }</p>
<h2>Routing</h2>
${routingTable(routing)}
<h2>Catalogue</h2>
${page ? catalogue(page.items, page.total) : `<p class="bad">The catalogue cannot be read.</p>`}
<h2>API keys</h2>
${keys ? keyTable(keys) : `<p class="bad">The keys cannot be read.</p>`}
</body></html>
`;
  return new Response(html, {
    status: health === undefined ? 200 : 503,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": DASHBOARD_CSP,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cache-control": "no-store",
    },
  });
}

function routingTable(routing: RoutingTable): string {
  const row = (where: string, names: readonly string[]) =>
    `<tr><th>${where}</th><td>${names.map((n) => `<code>${esc(n)}</code>`).join(", ")}</td></tr>`;
  return `<table id="routing"><tbody>${row("client (user's machine)", routing.client)}${
    row("server", routing.server)
  }<tr><th>unknown namespaces</th><td>${esc(routing.default)}</td></tr></tbody></table>`;
}

function catalogue(items: readonly EntrySummary[], total: number): string {
  const rows = items.map((e) =>
    `<tr><td><code>${esc(`${e.name}.${e.hash.slice(0, 4)}`)}</code></td><td>${esc(e.type)}</td>` +
    `<td>${esc(e.routing)}</td><td>${esc(e.origin)}</td><td>${esc(e.description)}</td>` +
    `<td>${e.tools.map((t) => `<code>${esc(t)}</code>`).join(" ")}</td></tr>`
  ).join("\n");
  const shown = total > items.length ? ` (the first ${items.length} of ${total})` : "";
  return `<p id="catalogue-total">${total} entries${shown}</p>
<table id="catalogue"><thead><tr><th>FQDN</th><th>type</th><th>routing</th><th>origin</th><th>description</th><th>tools</th></tr></thead>
<tbody>${rows}</tbody></table>`;
}

function keyTable(keys: readonly ApiKeyRecord[]): string {
  if (keys.length === 0) {
    return `<p id="keys">No API key yet: <code>pml-server keys create</code>.</p>`;
  }
  const rows = keys.map((k) =>
    `<tr><td><code>${esc(k.prefix)}…</code></td><td>${esc(k.createdAt)}</td><td>${
      k.revokedAt ? `revoked ${esc(k.revokedAt)}` : "active"
    }</td></tr>`
  ).join("\n");
  return `<table id="keys"><thead><tr><th>prefix</th><th>created</th><th>state</th></tr></thead><tbody>${rows}</tbody></table>`;
}

/** HTML-escapes text for element content and quoted attributes. */
function esc(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
