import { join } from "node:path";
import { assertEquals, assertRejects } from "../testing/assert.ts";
import { isPmlError } from "../errors.ts";
import { Lockfile, lockfilePath } from "./lockfile.ts";

const INTEGRITY = "sha256-" + "A".repeat(43) + "=";
/** Yesterday: recent enough to be kept by the age clean-up. */
const FETCHED_AT = new Date(Date.now() - 24 * 60 * 60 * 1000).toISOString();

function entry(fqdn: string, type: "deno" | "stdio" = "deno") {
  return {
    fqdn,
    integrity: INTEGRITY,
    type,
    routing: "client" as const,
    fetchedAt: FETCHED_AT,
  };
}

async function withDir(fn: (dir: string) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "pml-lock-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("lockfile: records entries in the DESIGN §7 format, atomically", () =>
  withDir(async (ws) => {
    const lock = await Lockfile.open(ws);
    await Promise.all([
      lock.record("acme.tools.greet.hello", entry("acme.tools.greet.hello.ab12")),
      lock.record("pml.mcp.memory.server", entry("pml.mcp.memory.server.cd34", "stdio")),
    ]);
    const file = JSON.parse(await Deno.readTextFile(lockfilePath(ws)));
    assertEquals(file.version, 1);
    assertEquals(file.entries["acme.tools.greet.hello"], entry("acme.tools.greet.hello.ab12"));
    assertEquals(Object.keys(file.entries).length, 2);
    assertEquals(
      [...Deno.readDirSync(join(ws, ".pml"))].map((e) => e.name),
      ["mcp.lock"],
      "no temp file left",
    );
  }));

Deno.test("lockfile: entries no longer in allow/ask are dropped on load", () =>
  withDir(async (ws) => {
    const lock = await Lockfile.open(ws);
    await lock.record("acme.tools.greet.hello", entry("acme.tools.greet.hello.ab12"));
    await lock.record("acme.tools.old.thing", entry("acme.tools.old.thing.ab12"));
    await lock.record("pml.mcp.memory.server", entry("pml.mcp.memory.server.cd34", "stdio"));
    const perms = { allow: ["greet:hello"], ask: ["memory:create_entities"], deny: [] };
    const reopened = await Lockfile.open(ws, { permissions: perms });
    assertEquals(reopened.dropped, ["acme.tools.old.thing"]);
    const file = JSON.parse(await Deno.readTextFile(lockfilePath(ws)));
    assertEquals(Object.keys(file.entries).sort(), [
      "acme.tools.greet.hello",
      "pml.mcp.memory.server",
    ]);
  }));

Deno.test("lockfile: a configured server's entry stays whatever allow/ask say and however old; others go", () =>
  withDir(async (ws) => {
    const lock = await Lockfile.open(ws);
    const old = "2020-03-01T00:00:00.000Z";
    await lock.record("pml.mcp.notes.server", { ...entry("pml.mcp.notes.server", "stdio") });
    await lock.record("pml.mcp.web.server", {
      ...entry("pml.mcp.web.server", "stdio"),
      type: "http",
      fetchedAt: old,
    });
    await lock.record("pml.mcp.gone.server", entry("pml.mcp.gone.server", "stdio"));
    // A deno entry of the same namespace is no server's pin: the usual rules.
    await lock.record("acme.tools.notes.thing", entry("acme.tools.notes.thing.ab12"));
    const reopened = await Lockfile.open(ws, {
      permissions: { allow: [], ask: [], deny: [] },
      configured: new Set(["notes", "web"]),
    });
    assertEquals([...reopened.dropped].sort(), ["acme.tools.notes.thing", "pml.mcp.gone.server"]);
    assertEquals(reopened.stale, []);
    const file = JSON.parse(await Deno.readTextFile(lockfilePath(ws)));
    assertEquals(Object.keys(file.entries).sort(), ["pml.mcp.notes.server", "pml.mcp.web.server"]);
  }));

Deno.test("lockfile: a corrupt file is reported and left as is", () =>
  withDir(async (ws) => {
    await Deno.mkdir(join(ws, ".pml"));
    for (const text of ["{not json", JSON.stringify({ version: 2, entries: {} })]) {
      await Deno.writeTextFile(lockfilePath(ws), text);
      const err = await assertRejects(() =>
        Lockfile.open(ws, { permissions: { allow: [], ask: [], deny: [] } })
      );
      assertEquals(isPmlError(err, "LOCKFILE_CORRUPT"), true, err.message);
      assertEquals(await Deno.readTextFile(lockfilePath(ws)), text);
    }
  }));

Deno.test("lockfile: pins of stdio, http and tools round-trip; a malformed pin is reported, the file left as is", () =>
  withDir(async (ws) => {
    const lock = await Lockfile.open(ws);
    const pins = {
      ...entry("pml.mcp.memory.server", "stdio"),
      package: { name: "@scope/server", version: "1.0.0", integrity: "sha512-abc" },
      tools: { read_graph: INTEGRITY },
    };
    await lock.record("pml.mcp.memory.server", pins);
    const web = {
      ...entry("pml.mcp.web.server"),
      type: "http" as const,
      routing: "server" as const,
    };
    await lock.record("pml.mcp.web.server", {
      ...web,
      proxyTo: "http://127.0.0.1:1/mcp",
      envRequired: ["K"],
    });
    const back = await Lockfile.read(ws);
    assertEquals(back.get("pml.mcp.memory.server"), pins);
    assertEquals(back.get("pml.mcp.web.server")?.proxyTo, "http://127.0.0.1:1/mcp");
    const text = JSON.stringify({
      version: 1,
      entries: { "pml.mcp.memory.server": { ...pins, tools: { read_graph: 5 } } },
    });
    await Deno.writeTextFile(lockfilePath(ws), text);
    const err = await assertRejects(() =>
      Lockfile.open(ws, { permissions: { allow: ["memory"], ask: [], deny: [] } })
    );
    assertEquals(isPmlError(err, "LOCKFILE_CORRUPT"), true, err.message);
    assertEquals(err.message.includes("tools.read_graph"), true, err.message);
    assertEquals(await Deno.readTextFile(lockfilePath(ws)), text);
  }));

Deno.test("lockfile: an entry fetched in 2020 and never checked since is dropped on load; checked ones stay", () =>
  withDir(async (ws) => {
    const now = Date.parse("2026-11-25T12:00:00.000Z");
    const days = (n: number) => new Date(now - n * 24 * 60 * 60 * 1000).toISOString();
    const lock = await Lockfile.open(ws);
    await lock.record("acme.tools.old.thing", {
      ...entry("acme.tools.old.thing.ab12"),
      fetchedAt: "2020-03-01T00:00:00.000Z",
    });
    await lock.record("acme.tools.used.thing", {
      ...entry("acme.tools.used.thing.ab12"),
      fetchedAt: "2020-03-01T00:00:00.000Z",
      checkedAt: days(10),
    });
    await lock.record("acme.tools.recent.thing", {
      ...entry("acme.tools.recent.thing.ab12"),
      fetchedAt: days(89),
    });
    await lock.record("acme.tools.bad.date", {
      ...entry("acme.tools.bad.date.ab12"),
      fetchedAt: "yesterday",
    });
    const perms = { allow: ["*"], ask: [], deny: [] };

    const kept = await Lockfile.open(ws, { permissions: perms, maxAgeDays: 0, now });
    assertEquals(kept.stale, [], "0 keeps every entry");

    const reopened = await Lockfile.open(ws, { permissions: perms, now });
    assertEquals([...reopened.stale].sort(), ["acme.tools.bad.date", "acme.tools.old.thing"]);
    assertEquals(reopened.dropped, []);
    const file = JSON.parse(await Deno.readTextFile(lockfilePath(ws)));
    assertEquals(Object.keys(file.entries).sort(), [
      "acme.tools.recent.thing",
      "acme.tools.used.thing",
    ]);

    const shorter = await Lockfile.open(ws, { permissions: perms, maxAgeDays: 30, now });
    assertEquals(shorter.stale, ["acme.tools.recent.thing"]);
  }));

Deno.test("lockfile: markChecked moves checkedAt, at most once a day", () =>
  withDir(async (ws) => {
    const lock = await Lockfile.open(ws);
    const fetchedAt = "2026-01-01T00:00:00.000Z";
    await lock.record("acme.tools.a.b", { ...entry("acme.tools.a.b.ab12"), fetchedAt });
    const t = Date.parse("2026-11-25T12:00:00.000Z");
    await lock.markChecked("acme.tools.a.b", t);
    assertEquals(lock.get("acme.tools.a.b")?.checkedAt, new Date(t).toISOString());
    await lock.markChecked("acme.tools.a.b", t + 60_000);
    const file = JSON.parse(await Deno.readTextFile(lockfilePath(ws)));
    assertEquals(file.entries["acme.tools.a.b"].checkedAt, new Date(t).toISOString());
    assertEquals(file.entries["acme.tools.a.b"].fetchedAt, fetchedAt, "the first fetch is kept");
    await lock.markChecked("acme.tools.missing", t); // no entry: nothing to note
    assertEquals(lock.get("acme.tools.missing"), undefined);
  }));
