/**
 * The local approval page (docs/approvals.md): driven in headless Chromium (screenshots of a
 * pending write, an edit and a shell command, Yes / Always / No clicked), and attacked over HTTP
 * (forged and replayed tokens, foreign Host and Origin, missing form token, two workspaces).
 */
import { join } from "node:path";
import type { Client } from "../sdk/client.ts";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { findChromium, launchChromium } from "../testing/chromium.ts";
import { enterPage, rawHttp as raw } from "../testing/raw_http.ts";
import {
  gatewayFor,
  humanLines,
  type TempWorkspace,
  tempWorkspace,
  textOf,
} from "../testing/workspace.ts";

const PERMS = {
  permissions: {
    allow: ["filesystem:read_file"],
    ask: ["filesystem:write_file", "filesystem:edit_file", "shell:exec"],
    deny: [],
  },
};

function structured(r: unknown): Record<string, unknown> {
  return (r as { structuredContent: Record<string, unknown> }).structuredContent;
}

type Human = ReturnType<typeof humanLines>;

/**
 * Makes the agent call `name`; returns the approval id from its result and the page link that
 * went to the human (stderr), checking the result itself carries no link.
 */
async function ask(
  client: Client,
  human: Human,
  name: string,
  args: Record<string, unknown>,
) {
  const result = await client.callTool({ name, arguments: args });
  const body = structured(result);
  assertEquals(body.status, "approval_required", JSON.stringify(body));
  assert(!/token|http:/.test(JSON.stringify(result)), JSON.stringify(result));
  return { id: String(body.workflow_id), url: human.lastLink() };
}

async function resume(client: Client, id: string) {
  return await client.callTool({
    name: "pml__continue",
    arguments: { workflow_id: id, decision: "yes" },
  });
}

/** Width and height of a PNG, from its IHDR chunk. */
function pngSize(png: Uint8Array): { width: number; height: number } {
  assertEquals([...png.slice(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10], "a PNG");
  const view = new DataView(png.buffer, png.byteOffset);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

/**
 * Scrolls the approval `id` into view, takes a screenshot and returns, for each key field of it,
 * its text and whether it lies inside the captured viewport.
 */
async function shoot(
  browser: Awaited<ReturnType<typeof launchChromium>>,
  id: string,
  dir: string,
  name: string,
) {
  await browser.eval(`document.getElementById("a-${id}").scrollIntoView()`);
  const png = await browser.screenshot();
  await Deno.writeFile(join(dir, `${name}.png`), png);
  const size = pngSize(png);
  const viewport = await browser.eval<{ w: number; h: number }>(
    `({w: innerWidth * devicePixelRatio, h: innerHeight * devicePixelRatio})`,
  );
  assertEquals(size, { width: viewport.w, height: viewport.h }, "the screenshot is the viewport");
  return await browser.eval<Record<string, { text: string; visible: boolean }>>(`(() => {
    const card = document.getElementById("a-${id}");
    const out = {};
    const inView = (el) => {
      const r = el.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && r.top >= 0 && r.bottom <= innerHeight;
    };
    for (const el of card.querySelectorAll("[data-field]")) {
      out[el.dataset.field] = { text: el.textContent, visible: inView(el) };
    }
    for (const b of card.querySelectorAll("button")) {
      out["button:" + b.value] = { text: b.textContent, visible: inView(b) };
    }
    return out;
  })()`);
}

function assertShown(
  fields: Record<string, { text: string; visible: boolean }>,
  key: string,
  includes: string,
) {
  const f = fields[key];
  assert(f, `field ${key} is on the page: ${JSON.stringify(fields)}`);
  assert(f.visible, `field ${key} is inside the screenshot`);
  assertStringIncludes(f.text, includes);
}

Deno.test({
  name:
    "approval page in headless Chromium: a write, an edit (diff) and a shell command shown; Yes, Always, No decide",
  ignore: !findChromium() && Deno.env.get("CI") === undefined,
  async fn() {
    await using ws = tempWorkspace(PERMS);
    ws.write("a.txt", "first line\nold line\nlast line\n");
    const human = humanLines();
    await using g = await gatewayFor(ws, { tell: human.tell });
    const write = await ask(g.client, human, "filesystem__write_file", {
      path: "todo.txt",
      content: "buy milk",
    });
    const edit = await ask(g.client, human, "filesystem__edit_file", {
      path: "a.txt",
      edits: [{ oldText: "old line", newText: "new line" }],
    });
    const shell = await ask(g.client, human, "shell__exec", { command: "echo hello > shell.txt" });

    await using browser = await launchChromium();
    await browser.goto(write.url);
    assertEquals(
      await browser.eval("location.pathname + location.search"),
      "/",
      "the token left the URL",
    );
    const shots = join(ws.root, "shots");
    await Deno.mkdir(shots);

    const w = await shoot(browser, write.id, shots, "write");
    assertShown(w, "tool", "filesystem:write_file");
    assertShown(w, "path", "todo.txt");
    assertShown(w, "content", "buy milk");
    assertShown(w, "where", "this machine");
    assertShown(w, "why", 'Allow "filesystem:write_file" to run?');
    assertShown(w, "why", 'It matches "filesystem:write_file" in the "ask" list of .pml.json.');
    assertShown(w, "why", "The agent cannot approve it");
    for (const b of ["yes", "always", "no"]) assertShown(w, `button:${b}`, "");

    const e = await shoot(browser, edit.id, shots, "edit");
    assertShown(e, "tool", "filesystem:edit_file");
    assertShown(e, "diff", "- old line");
    assertShown(e, "diff", "+ new line");

    const s = await shoot(browser, shell.id, shots, "shell");
    assertShown(s, "tool", "shell:exec");
    assertShown(s, "command", "echo hello > shell.txt");
    assertShown(s, "why", 'It matches "shell:exec" in the "ask" list');
    assertShown(s, "button:no", "No");

    // Yes on the write.
    await browser.clickAndWait(`#a-${write.id} button[value=yes]`);
    assertStringIncludes(
      await browser.eval<string>(`document.getElementById("a-${write.id}").textContent`),
      "Decided: yes",
    );
    const written = await resume(g.client, write.id);
    assert(!written.isError, textOf(written));
    assertEquals(ws.read("todo.txt"), "buy milk");

    // Always on the edit: it runs and edit_file joins allow.
    await browser.clickAndWait(`#a-${edit.id} button[value=always]`);
    const edited = await resume(g.client, edit.id);
    assert(!edited.isError, textOf(edited));
    assertEquals(ws.read("a.txt"), "first line\nnew line\nlast line\n");
    assert(JSON.parse(ws.read(".pml.json")).permissions.allow.includes("filesystem:edit_file"));

    // No on the shell command: the agent's "yes" does not override it.
    await browser.clickAndWait(`#a-${shell.id} button[value=no]`);
    const refused = await resume(g.client, shell.id);
    assert(refused.isError);
    assertStringIncludes(textOf(refused), "the user refused");
    assert(!(await Deno.stat(join(ws.dir, "shell.txt")).catch(() => false)));

    // Answered approvals leave the page.
    await browser.goto(new URL("/", write.url).href);
    assertEquals(
      await browser.eval(`document.getElementById("empty")?.textContent`),
      "No approval is waiting.",
    );
  },
});

/** Trades a one-time link for the page's session cookie and form token. */
async function enter(url: string) {
  const s = await enterPage(url);
  assertEquals(s.status, 200, s.page);
  assert(s.cookie && s.csrf);
  return s;
}

function decideForm(id: string, decision: string, csrf?: string): string {
  const form = new URLSearchParams({ id, decision, ...(csrf ? { csrf } : {}) });
  return form.toString();
}

async function pendingWrite(ws: TempWorkspace, client: Client, human: Human, path: string) {
  const w = await ask(client, human, "filesystem__write_file", { path, content: path });
  return { ...w, written: () => Deno.stat(join(ws.dir, path)).then(() => true, () => false) };
}

Deno.test("approval page attacks: forged and replayed tokens, foreign Host and Origin, no form token", async () => {
  await using ws = tempWorkspace(PERMS);
  const human = humanLines();
  await using g = await gatewayFor(ws, { tell: human.tell });
  const w = await pendingWrite(ws, g.client, human, "victim.txt");
  const u = new URL(w.url);
  const port = Number(u.port);
  const at = u.host;

  // A forged token opens nothing and sets no cookie.
  const forged = await raw(at, { path: "/?token=" + "ab".repeat(24), headers: { host: u.host } });
  assertEquals(forged.status, 403);
  assert(!/set-cookie/i.test(forged.headers));
  // Without a session, the page and its API are closed.
  assertEquals((await raw(at, { path: "/", headers: { host: u.host } })).status, 403);
  assertEquals((await raw(at, { path: "/version", headers: { host: u.host } })).status, 403);

  // A foreign Host (DNS rebinding) is refused, even with a valid token, which stays unused.
  const rebound = await raw(at, {
    path: u.pathname + u.search,
    headers: { host: `attacker.example:${port}` },
  });
  assertEquals(rebound.status, 421);

  const s = await enter(w.url);
  assertStringIncludes(s.page, "victim.txt");
  // The link works once: replayed, it is refused.
  const replay = await raw(at, { path: u.pathname + u.search, headers: { host: u.host } });
  assertEquals(replay.status, 403);
  assertStringIncludes(replay.body, "used already");

  const post = (headers: Record<string, string>, body: string) =>
    raw(at, {
      method: "POST",
      path: "/decide",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body,
    });
  // Cross-site form posts: a foreign Origin, or none, with the cookie and even the right token.
  for (
    const origin of [
      "http://attacker.example",
      `http://localhost.attacker.example:${port}`,
      "null",
      "",
    ]
  ) {
    const r = await post(
      { host: s.host, cookie: s.cookie, ...(origin ? { origin } : {}) },
      decideForm(w.id, "yes", s.csrf),
    );
    assertEquals(r.status, 403, `Origin "${origin}"`);
  }
  // Same origin but no (or a wrong) form token.
  assertEquals(
    (await post({ host: s.host, cookie: s.cookie, origin: u.origin }, decideForm(w.id, "yes")))
      .status,
    403,
  );
  assertEquals(
    (await post(
      { host: s.host, cookie: s.cookie, origin: u.origin },
      decideForm(w.id, "yes", "00"),
    )).status,
    403,
  );
  // A forged cookie.
  assertEquals(
    (await post(
      { host: s.host, cookie: s.cookie.replace(/=.*/, "=forged"), origin: u.origin },
      decideForm(w.id, "yes", s.csrf),
    )).status,
    403,
  );
  // Nothing was decided by any of these: the agent still waits, nothing is written.
  const still = await resume(g.client, w.id);
  assertEquals(structured(still).status, "waiting_for_human");
  assert(!(await w.written()));

  // Bad input from the page itself gets a clear error and changes nothing.
  const bad = await post(
    { host: s.host, cookie: s.cookie, origin: u.origin },
    decideForm(w.id, "maybe", s.csrf),
  );
  assertEquals(bad.status, 400);
  const unknown = await post(
    { host: s.host, cookie: s.cookie, origin: u.origin },
    decideForm("00000000-0000-4000-8000-000000000000", "yes", s.csrf),
  );
  assertEquals(unknown.status, 409);

  // The genuine decision works.
  const ok = await post(
    { host: s.host, cookie: s.cookie, origin: u.origin },
    decideForm(w.id, "yes", s.csrf),
  );
  assertEquals(ok.status, 303);
  assert(!(await resume(g.client, w.id)).isError);
  assert(await w.written());
});

Deno.test("two workspaces at once: each page lists its own approvals; a link or cookie of one opens nothing on the other", async () => {
  await using wsA = tempWorkspace(PERMS);
  await using wsB = tempWorkspace(PERMS);
  const humanA = humanLines();
  const humanB = humanLines();
  await using a = await gatewayFor(wsA, { tell: humanA.tell });
  await using b = await gatewayFor(wsB, { tell: humanB.tell });
  const wa = await pendingWrite(wsA, a.client, humanA, "in-a.txt");
  const wb = await pendingWrite(wsB, b.client, humanB, "in-b.txt");
  const hostA = new URL(wa.url).host;
  const hostB = new URL(wb.url).host;
  assert(hostA !== hostB);

  // A's token presented to B's page.
  const tokenA = new URL(wa.url).search;
  const cross = await raw(hostB, { path: "/" + tokenA, headers: { host: hostB } });
  assertEquals(cross.status, 403);

  const sa = await enter(wa.url);
  const sb = await enter(wb.url);
  assertStringIncludes(sa.page, "in-a.txt");
  assert(!sa.page.includes("in-b.txt"), "A's page does not show B's approvals");
  assertStringIncludes(sb.page, "in-b.txt");
  assert(!sb.page.includes("in-a.txt"));

  // A's session cookie (and form token) sent to B's page.
  const crossPost = await raw(hostB, {
    method: "POST",
    path: "/decide",
    headers: {
      host: hostB,
      origin: `http://${hostB}`,
      cookie: sa.cookie,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: decideForm(wb.id, "yes", sa.csrf),
  });
  assertEquals(crossPost.status, 403);
  // A's page cannot decide B's approval either (not in A's store).
  const viaA = await raw(hostA, {
    method: "POST",
    path: "/decide",
    headers: {
      host: sa.host,
      origin: `http://${hostA}`,
      cookie: sa.cookie,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: decideForm(wb.id, "yes", sa.csrf),
  });
  assertEquals(viaA.status, 409);
  assertEquals(structured(await resume(b.client, wb.id)).status, "waiting_for_human");
  assert(!(await wb.written()));
});

Deno.test({
  name:
    "approval page shows everything: 25,000 characters in full, wide arguments wrap, zero-width and trailing spaces marked; without .pml.json the why names the built-in defaults",
  ignore: !findChromium() && Deno.env.get("CI") === undefined,
  async fn() {
    await using ws = tempWorkspace(); // no .pml.json: the built-in defaults ask for writes
    const human = humanLines();
    await using g = await gatewayFor(ws, { tell: human.tell });
    const content = "A".repeat(25_000) + "END\nrm -rf ~/\u200B\u202Egnp.exe\nkeep   \n\tdone\t";
    const path = "deep/" + "very-long-folder-name-".repeat(40) + "file.txt";
    const w = await ask(g.client, human, "filesystem__write_file", { path, content });
    await using browser = await launchChromium();
    await browser.goto(w.url);
    const seen = await browser.eval<Record<string, unknown>>(`(() => {
      const card = document.getElementById("a-${w.id}");
      const f = (n) => card.querySelector('[data-field="' + n + '"]');
      const pres = [...card.querySelectorAll("pre")];
      return {
        content: f("content").textContent,
        why: f("why").textContent,
        id: f("id").textContent,
        hidden: [...card.querySelectorAll("mark.hidden")].map((m) => m.textContent),
        trailing: [...f("content").querySelectorAll("mark.ws")].map((m) => m.textContent),
        overflowingBoxes: pres.filter((p) => p.scrollWidth > p.clientWidth + 1).length,
        pathFits: f("path").scrollWidth <= f("path").clientWidth + 1,
        pageWidth: document.documentElement.scrollWidth,
        viewport: innerWidth,
      };
    })()`);
    const shown = String(seen.content);
    assert(shown.includes("A".repeat(25_000) + "END"), "the whole content, not cut at 20,000");
    assertEquals(seen.id, w.id);
    assertEquals(seen.hidden, ["⟦U+200B⟧", "⟦U+202E⟧", "⟦U+200B⟧", "⟦U+202E⟧"]);
    assertEquals(seen.trailing, ["···", "→"]);
    assertEquals(seen.overflowingBoxes, 0, "long lines wrap inside their box");
    assert(seen.pathFits, "a long path wraps");
    assert(Number(seen.pageWidth) <= Number(seen.viewport), JSON.stringify(seen));
    assertStringIncludes(String(seen.why), "PML's built-in defaults (no permissions of .pml.json");
    assert(!String(seen.why).includes("list of .pml.json"), String(seen.why));
    await Deno.writeFile(join(ws.root, "long.png"), await browser.screenshot());
  },
});

Deno.test("approval page: a page reached under another name (localhost, 127.0.0.1) is refused as a whole, never half-working", async () => {
  await using ws = tempWorkspace(PERMS);
  const human = humanLines();
  await using g = await gatewayFor(ws, { tell: human.tell });
  const w = await pendingWrite(ws, g.client, human, "v.txt");
  const u = new URL(w.url);
  assert(u.hostname.startsWith("127.") && u.hostname !== "127.0.0.1", u.hostname);
  for (const host of [`localhost:${u.port}`, `127.0.0.1:${u.port}`]) {
    const r = await raw(u.host, { path: u.pathname + u.search, headers: { host } });
    assertEquals(r.status, 421, host);
    assertStringIncludes(r.body, `answers only ${u.host}`);
  }
  // The link still works under its own name, Yes included.
  const s = await enter(w.url);
  const ok = await raw(u.host, {
    method: "POST",
    path: "/decide",
    headers: {
      host: s.host,
      cookie: s.cookie,
      origin: u.origin,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: decideForm(w.id, "yes", s.csrf),
  });
  assertEquals(ok.status, 303, ok.body);
  assert(!(await resume(g.client, w.id)).isError);
  assert(await w.written());
});
