import { assert, assertEquals, assertMatch, assertThrows } from "../testing/assert.ts";
import { join } from "node:path";
import { PmlError } from "../errors.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import { DEFAULT_PERMISSIONS } from "./defaults.ts";
import { loadConfig } from "./config.ts";
import { pmlSchemas } from "./schema.ts";
import { denoLaunch } from "../deps/launch.ts";
import { PrivateMcpSource } from "../deps/sources.ts";
import { resolveWorkspace } from "./workspace.ts";

Deno.test("workspace: PML_WORKSPACE wins", async () => {
  await using ws = tempWorkspace();
  const r = resolveWorkspace({ env: { PML_WORKSPACE: ws.dir }, cwd: ws.root });
  assertEquals(r, { path: ws.dir, source: "env" });
});

Deno.test("workspace: unexpanded ${workspaceFolder} is ignored, nearest marker is used", async () => {
  await using ws = tempWorkspace();
  const sub = join(ws.dir, "a", "b");
  Deno.mkdirSync(sub, { recursive: true });
  const r = resolveWorkspace({ env: { PML_WORKSPACE: "${workspaceFolder}" }, cwd: sub });
  assertEquals(r, { path: ws.dir, source: "marker" });
});

Deno.test("workspace: falls back to cwd with a warning", async () => {
  await using ws = tempWorkspace();
  const bare = join(ws.root, "bare");
  Deno.mkdirSync(bare);
  const r = resolveWorkspace({ env: {}, cwd: bare });
  // A marker may exist above the temp dir on some machines; only the fallback has a warning.
  if (r.source === "cwd") {
    assertEquals(r.path, bare);
    assertMatch(r.warning!, /no project root found/);
  }
});

Deno.test("workspace: PML_WORKSPACE that does not exist is a clear error", () => {
  assertThrows(
    () => resolveWorkspace({ env: { PML_WORKSPACE: "/no/such/dir" }, cwd: "/" }),
    TypeError,
    'PML_WORKSPACE "/no/such/dir" does not exist',
  );
});

Deno.test("config: defaults without .pml.json", async () => {
  await using ws = tempWorkspace();
  const c = loadConfig({ env: { PML_WORKSPACE: ws.dir }, cwd: ws.dir, home: ws.home });
  assertEquals(c.hasConfigFile, false);
  assertEquals(c.permissions, DEFAULT_PERMISSIONS);
  assertEquals(c.apiKey, undefined);
  assertEquals(c.pmlHome, join(ws.home, ".pml"));
});

Deno.test("config: .pml.json is the only source of permissions, ${VAR} expanded", async () => {
  await using ws = tempWorkspace({
    cloudUrl: "${CLOUD}/",
    permissions: { allow: ["json"], deny: ["shell"] },
    sandbox: { read: ["${EXTRA}"] },
  });
  const extra = join(ws.root, "extra");
  Deno.mkdirSync(extra);
  const c = loadConfig({
    env: { PML_WORKSPACE: ws.dir, CLOUD: "http://127.0.0.1:9", EXTRA: extra },
    cwd: ws.dir,
    home: ws.home,
  });
  assertEquals(c.cloudUrl, "http://127.0.0.1:9");
  assertEquals(c.permissions, { allow: ["json"], ask: [], deny: ["shell"] });
  assertEquals(c.sandbox.read, [extra]);
});

Deno.test("config: invalid file names the file, the field and what was expected", async () => {
  for (
    const [content, field, expected] of [
      [{ permissions: { allow: "json" } }, "permissions.allow", /expected array/],
      [{ permissions: { allow: ["bad pattern!"] } }, "permissions.allow.0", /tool pattern/],
      [{ cloudUrl: "not a url" }, "cloudUrl", /URL/],
      [{ port: 70000 }, "port", /65535/],
      [{ permisions: {} }, "(top level)", /permisions/],
      [{ sandbox: { net: ["https://api.example.com/x"] } }, "sandbox.net.0", /host:port/],
      [{ sandbox: { net: ["a.com,b.com"] } }, "sandbox.net.0", /host:port/],
    ] as const
  ) {
    await using ws = tempWorkspace(content);
    const err = assertThrows(() => loadConfig({ env: { PML_WORKSPACE: ws.dir }, cwd: ws.dir }));
    assert(err instanceof PmlError);
    assertEquals(err.code, "CONFIG_INVALID");
    assert(err.message.includes(join(ws.dir, ".pml.json")), err.message);
    assert(err.message.includes(`"${field}"`), err.message);
    assertMatch(err.message, expected);
  }
});

Deno.test("config: broken JSON and unset variables are clear errors", async () => {
  await using ws = tempWorkspace();
  ws.write(".pml.json", "{ not json");
  assertThrows(
    () => loadConfig({ env: { PML_WORKSPACE: ws.dir }, cwd: ws.dir }),
    PmlError,
    "not valid JSON",
  );
  ws.write(".pml.json", JSON.stringify({ cloudUrl: "${NOPE_NOT_SET}" }));
  assertThrows(
    () => loadConfig({ env: { PML_WORKSPACE: ws.dir }, cwd: ws.dir }),
    PmlError,
    'environment variable "NOPE_NOT_SET" is not set',
  );
});

Deno.test("config: a registry entry pasted into private_mcps keeps ${workspace}/${packageDir} for the launcher, ${VAR} still expanded", async () => {
  const entry = JSON.parse(
    Deno.readTextFileSync(join(import.meta.dirname!, "../../../../registry/mcp/memory.json")),
  );
  entry.permissions.read.push("${workspace}/notes", "${NOTES}");
  await using ws = tempWorkspace({ private_mcps: { memtwo: entry } });
  const c = loadConfig({
    env: { PML_WORKSPACE: ws.dir, NOTES: "/srv/notes" },
    cwd: ws.dir,
    home: ws.home,
  });
  const perms = c.privateMcps.memtwo as { permissions: { read: string[]; write: string[] } };
  assertEquals(perms.permissions.read, [
    "${packageDir}",
    "${workspace}/notes",
    "/srv/notes",
  ]);
  assertEquals(perms.permissions.write, ["${packageDir}"]);
  // The launcher expands the placeholders with the real folders.
  const meta = (await new PrivateMcpSource(c.privateMcps).get("memtwo"))!;
  const spec = denoLaunch(meta, {
    dir: "/deps/memtwo",
    packageDir: "/deps/memtwo/node_modules/pkg",
    integrity: meta.package!.integrity!,
    bin: "/deps/memtwo/node_modules/pkg/dist/index.js",
  }, {
    workspace: ws.dir,
    denoPath: "deno",
    denoDir: "/cache",
    env: {},
    osSandbox: { available: false, reason: "test" },
    unconfined: true,
  });
  assert(
    spec.args.includes(
      `--allow-read=/deps/memtwo,/deps/memtwo/node_modules/pkg,${ws.dir}/notes,/srv/notes`,
    ),
    spec.args.join(" "),
  );
  assert(spec.args.includes("--allow-write=/deps/memtwo/node_modules/pkg"), spec.args.join(" "));
});

Deno.test("config: a metadata placeholder outside private_mcps is a clear error, not an env lookup", async () => {
  await using ws = tempWorkspace({ sandbox: { read: ["${packageDir}"] } });
  const err = assertThrows(
    () => loadConfig({ env: { PML_WORKSPACE: ws.dir, packageDir: "/x" }, cwd: ws.dir }),
    PmlError,
  );
  assertEquals((err as PmlError).code, "CONFIG_INVALID");
  assertMatch(
    err.message,
    /sandbox\.read\[0\]: \$\{packageDir\} is a registry metadata placeholder/,
  );
});

Deno.test("config: a .pml.json saved with a UTF-8 BOM loads", async () => {
  await using ws = tempWorkspace();
  ws.write(".pml.json", "\uFEFF" + JSON.stringify({ permissions: { allow: ["json"] } }));
  const c = loadConfig({ env: { PML_WORKSPACE: ws.dir }, cwd: ws.dir, home: ws.home });
  assertEquals(c.permissions.allow, ["json"]);
});

Deno.test("config: a .pml.json linked to a file outside the workspace is refused without its bytes", async () => {
  await using ws = tempWorkspace();
  const secret = join(ws.root, "secret.txt");
  Deno.writeTextFileSync(secret, "TOPSECRET-line-one\nsecond line");
  Deno.symlinkSync(secret, join(ws.dir, ".pml.json"));
  const err = assertThrows(() => loadConfig({ env: { PML_WORKSPACE: ws.dir }, cwd: ws.dir }));
  assert(err instanceof PmlError);
  assertEquals(err.code, "CONFIG_INVALID");
  assertMatch(err.message, /symbolic link to ".*secret\.txt", outside the workspace/);
  assert(!err.message.includes("TOPSECRET"), err.message);
  assert(!JSON.stringify(err.details ?? {}).includes("TOPSECRET"));
});

Deno.test("config: a .pml.json linked to a file inside the workspace still loads", async () => {
  await using ws = tempWorkspace();
  ws.write("config/pml.json", JSON.stringify({ permissions: { deny: ["shell"] } }));
  Deno.symlinkSync("config/pml.json", join(ws.dir, ".pml.json"));
  const c = loadConfig({ env: { PML_WORKSPACE: ws.dir }, cwd: ws.dir, home: ws.home });
  assertEquals(c.permissions.deny, ["shell"]);
});

Deno.test("config: plain http off loopback is refused for cloudUrl, PML_CLOUD_URL and registries", async () => {
  for (
    const [file, env, what] of [
      [{ cloudUrl: "http://pml.example.com" }, {}, "cloudUrl"],
      [{}, { PML_CLOUD_URL: "http://10.0.0.8:3000" }, "PML_CLOUD_URL"],
      [{ registries: ["https://a.example", "http://b.example"] }, {}, "registries[1]"],
      [{ cloudUrl: "http://127.0.0.1.evil.example" }, {}, "cloudUrl"],
      [{ cloudUrl: "ftp://pml.example.com" }, {}, "cloudUrl"],
    ] as const
  ) {
    await using ws = tempWorkspace(file);
    const err = assertThrows(() =>
      loadConfig({ env: { PML_WORKSPACE: ws.dir, ...env }, cwd: ws.dir, home: ws.home })
    );
    assert(err instanceof PmlError, String(err));
    assertEquals(err.code, "CONFIG_INVALID");
    assert(err.message.includes(what), err.message);
    assertMatch(err.message, /https/i);
  }
});

Deno.test("config: plain http stays allowed on loopback, https anywhere", async () => {
  for (
    const url of [
      "http://127.0.0.1:3000",
      "http://127.8.9.10",
      "http://localhost:8080",
      "http://[::1]:9000",
      "https://pml.example.com",
    ]
  ) {
    await using ws = tempWorkspace({ cloudUrl: url, registries: [url] });
    const c = loadConfig({ env: { PML_WORKSPACE: ws.dir }, cwd: ws.dir, home: ws.home });
    assertEquals(c.cloudUrl, url);
    assertEquals(c.registries, [url]);
  }
});

Deno.test("config: .pml.json is checked on zod's reference path (jitless), accepting and refusing exactly as its compiled parser", () => {
  const cases: unknown[] = [
    {},
    { permissions: { allow: ["filesystem", "json:*"], ask: [], deny: ["shell:exec"] } },
    { permissions: { allow: ["bad pattern"] } },
    { permissions: { allow: [], extra: 1 } },
    { permissions: "all" },
    { port: 4242, approvals: "agent", notify: "desktop", version: 1 },
    { port: 0 },
    { port: "4242" },
    { port: 4242.5 },
    { cloudUrl: "https://pml.example" },
    { cloudUrl: "not a url" },
    { registries: ["https://r.example", 42] },
    { env: ["TAVILY_API_KEY", "1BAD"] },
    { lockfile: { maxAgeDays: 0 } },
    { lockfile: { maxAgeDays: -1, other: true } },
    {
      sandbox: {
        read: ["docs"],
        net: ["api.example.com:443", "[::1]:8080"],
        sshAgent: true,
        unconfined: false,
      },
    },
    { sandbox: { net: ["http://api.example.com"] } },
    { sandbox: { deny: "secrets" } },
    {
      private_mcps: {
        a: { type: "stdio", install: { command: "node", args: ["x.js"] }, extra: "kept" },
        b: { type: "http", proxyTo: "https://h.example/mcp", headers: { A: "{KEY}" } },
        c: { type: "deno", module: "tools/c.ts", permissions: { net: ["bad host!"] } },
      },
    },
    { private_mcps: { d: { type: "python" } } },
    { private_mcps: [] },
    { unknownKey: true },
    { __proto__: { permissions: { allow: ["*"] } } },
    JSON.parse('{"__proto__": {"x": 1}, "port": 1}'),
    { constructor: { prototype: {} } },
    [],
    null,
    "text",
  ];
  const { PmlFileSchema } = pmlSchemas();
  for (const value of cases) {
    const compiled = PmlFileSchema.safeParse(value);
    const reference = PmlFileSchema.safeParse(value, { jitless: true });
    const what = JSON.stringify(value);
    assertEquals(reference.success, compiled.success, what);
    assertEquals(reference.data, compiled.data, what);
    assertEquals(reference.error?.issues, compiled.error?.issues, what);
  }
});
