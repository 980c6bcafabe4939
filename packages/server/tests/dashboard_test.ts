/**
 * `GET /`: the read-only dashboard of the real `createApp()`: health, routing, catalogue, key
 * prefixes (never a whole key), HTML-escaped, no external asset, a strict CSP; and in headless
 * Chromium, served on loopback, the page renders with its own style and loads nothing else.
 */
import assert from "node:assert/strict";
import { findChromium, launchChromium } from "../../pml/src/testing/chromium.ts";
import { capabilityCode, testServer } from "./helpers.ts";

const HOSTILE =
  `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">`;

async function withCapability() {
  const server = await testServer();
  const published = await server.publish({
    org: "acme",
    project: "tools",
    namespace: "notes",
    action: "add",
    code: capabilityCode("add"),
    description: HOSTILE,
  });
  assert.equal(published.status, 201, await published.clone().text());
  return server;
}

Deno.test("dashboard: GET / answers a self-contained read-only page with a strict CSP", async () => {
  const server = await withCapability();
  try {
    const response = await server.request("/");
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/html; charset=utf-8");
    const csp = response.headers.get("content-security-policy") ?? "";
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /style-src 'sha256-[A-Za-z0-9+/]+=*'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
    assert.equal(response.headers.get("x-content-type-options"), "nosniff");
    const html = await response.text();
    assert.doesNotMatch(
      html,
      /<(script|img|link|iframe|object|embed)\b/i,
      "nothing to run or load",
    );
    assert.doesNotMatch(html, /<[^>]*\s(src|href|action)=/i, "no attribute that loads");
    assert.match(html, /pml\.std\.demo\.add\.[0-9a-f]{4}/);
    assert.match(html, /acme\.tools\.notes\.add\.[0-9a-f]{4}/);
    assert.match(html, /ok: store sqlite answers/);
    assert.match(html, /<code>filesystem<\/code>/);
    assert.ok(html.includes(`${server.key.slice(0, 12)}…`), "the key's prefix is shown");
    assert.ok(!html.includes(server.key), "never the whole key");
    assert.ok(html.includes("&#60;script&#62;document.title="), "the description is escaped");
    assert.ok(!html.includes(HOSTILE));

    const head = await server.request("/", { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
    const post = await server.request("/", { method: "POST", body: "x" });
    assert.equal(post.status, 405);
  } finally {
    await server.close();
  }
});

Deno.test({
  name:
    "dashboard in headless Chromium: renders health, routing, catalogue and keys; runs nothing, loads nothing",
  ignore: !findChromium() && Deno.env.get("CI") === undefined,
  async fn() {
    const server = await withCapability();
    const http = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, server.app);
    try {
      await using browser = await launchChromium();
      await browser.goto(`http://127.0.0.1:${http.addr.port}/`);
      const page = await browser.eval<Record<string, unknown>>(`(() => ({
        title: document.title,
        health: document.getElementById("health").textContent,
        routing: document.getElementById("routing").textContent,
        rows: document.querySelectorAll("#catalogue tbody tr").length,
        total: document.getElementById("catalogue-total").textContent,
        hostile: [...document.querySelectorAll("#catalogue td")].some((td) =>
          td.textContent.includes('<script>document.title="pwned"</script>')),
        keys: document.getElementById("keys").textContent,
        active: document.querySelectorAll("script, img, iframe, link").length,
        styled: getComputedStyle(document.querySelector("th")).backgroundColor,
        loaded: performance.getEntriesByType("resource").length,
      }))()`);
      assert.equal(page.title, "pml-server", "the hostile description ran no script");
      assert.match(String(page.health), /^ok: store sqlite answers/);
      assert.match(String(page.routing), /filesystem/);
      assert.equal(page.rows, 5, "the 4 seeded entries and the published capability");
      assert.match(String(page.total), /^5 entries/);
      assert.equal(page.hostile, true, "shown as text");
      assert.ok(String(page.keys).includes(`${server.key.slice(0, 12)}…`));
      assert.ok(!String(page.keys).includes(server.key));
      assert.equal(page.active, 0);
      assert.equal(page.styled, "rgb(244, 244, 246)", "its own style passed the CSP");
      assert.equal(page.loaded, 0, "no other request");
    } finally {
      await http.shutdown();
      await server.close();
    }
  },
});
