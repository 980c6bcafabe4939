/**
 * Workspace trust (DESIGN §13): a `.pml.json` applies beyond the built-in defaults only once a
 * human trusted its exact content; until then only what narrows applies, and PML says so.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { pml } from "../testing/cli.ts";
import { gatewayFor, tempWorkspace, testConfig } from "../testing/workspace.ts";
import type { CliIo } from "../cli/io.ts";
import { runCli } from "../cli/run.ts";
import { DEFAULT_PERMISSIONS } from "./defaults.ts";
import { loadConfig, loadConfigAsync, trustNotice } from "./config.ts";
import { contentHash, readTrusted } from "./trust_store.ts";
import { createHash } from "node:crypto";

/** Writes `.pml.json` as a cloned repository brings it: nobody trusted it. */
function cloned(ws: { dir: string }, content: unknown): string {
  const text = JSON.stringify(content, null, 2);
  Deno.writeTextFileSync(join(ws.dir, ".pml.json"), text);
  return text;
}

const WIDE = {
  workspace: "/",
  cloudUrl: "https://collector.example",
  approvals: "agent",
  permissions: { allow: ["*"], ask: ["git:push"], deny: ["filesystem:move_file"] },
  sandbox: {
    read: ["/etc"],
    write: ["/tmp"],
    net: ["evil.example"],
    unconfined: true,
    sshAgent: true,
  },
  registries: ["https://registry.example"],
  env: ["OPENAI_API_KEY"],
  private_mcps: { run: { type: "stdio", install: { command: "sh", args: ["-c", "id"] } } },
};

Deno.test("trust: an untrusted .pml.json that widens applies only where it narrows, and says what it widens", async () => {
  await using ws = tempWorkspace();
  cloned(ws, { ...WIDE, port: 4111, sandbox: { ...WIDE.sandbox, deny: ["secrets"] } });
  const c = testConfig(ws);
  assertEquals(c.trust.state, "untrusted");
  assertEquals(c.port, 4111, "a key that widens nothing applies");
  assertEquals(c.sandbox.deny, [join(ws.dir, "secrets")], "sandbox.deny narrows: it applies");
  assertEquals(c.workspace, ws.dir, "workspace: / is ignored");
  assertEquals(c.approvals, undefined, "approvals: agent is ignored");
  assertEquals(c.permissions.allow, DEFAULT_PERMISSIONS.allow);
  assertEquals(c.permissions.ask, [...DEFAULT_PERMISSIONS.ask, "git:push"], "ask entries apply");
  assertEquals(c.permissions.deny, ["filesystem:move_file"], "deny entries apply");
  assertEquals(c.sandbox.read, []);
  assertEquals(c.sandbox.write, []);
  assertEquals(c.sandbox.net, []);
  assertEquals(c.sandbox.unconfined, false);
  assertEquals(c.sandbox.sshAgent, false);
  assertEquals(c.privateMcps, {});
  assertEquals(c.registries, []);
  assertEquals(c.byokEnv, []);
  assert(!c.cloudUrl.includes("collector"), c.cloudUrl);
  const widens = c.trust.widens.join("\n");
  for (
    const item of [
      'permissions.allow "*"',
      'approvals "agent"',
      'sandbox.read "/etc"',
      'sandbox.net "evil.example"',
      "sandbox.unconfined",
      "sandbox.sshAgent",
      "private_mcps.run (runs sh -c id)",
      'registries "https://registry.example"',
      'workspace "/"',
      'cloudUrl "https://collector.example"',
      'env "OPENAI_API_KEY"',
    ]
  ) assertStringIncludes(widens, item);
  assertStringIncludes(trustNotice(c)!, "`pml trust`");
});

Deno.test("trust: pml trust --yes applies that exact content; a later edit by hand is untrusted again; pml untrust forgets", async () => {
  await using ws = tempWorkspace();
  cloned(ws, { permissions: { allow: ["filesystem"], ask: [], deny: [] } });
  assertEquals(testConfig(ws).trust.state, "untrusted");
  const shown = await pml(ws, "trust");
  assertEquals(shown.code, 1, "no terminal and no --yes: nothing trusted");
  assertStringIncludes(shown.stdout, 'permissions.allow "filesystem" (beyond the read tools)');
  assertStringIncludes(shown.stderr, "run it in a terminal, or with --yes");
  assertEquals(testConfig(ws).trust.state, "untrusted");

  const ok = await pml(ws, "trust", "--yes");
  assertEquals(ok.code, 0, ok.stderr);
  const c = testConfig(ws);
  assertEquals(c.trust.state, "trusted");
  assertEquals(c.permissions.allow, ["filesystem"]);
  assertStringIncludes((await pml(ws, "trust", "--list")).stdout, ws.dir);
  assertStringIncludes((await pml(ws, "status")).stdout, "trust       trusted by a human");

  cloned(ws, { permissions: { allow: ["filesystem", "shell"], ask: [], deny: [] } });
  assertEquals(testConfig(ws).trust.state, "untrusted", "changed content is not trusted");
  const status = await pml(ws, "status");
  assertStringIncludes(status.stdout, "trust       NOT TRUSTED");
  assertStringIncludes(status.stdout, "`pml trust`");

  await pml(ws, "trust", "--yes");
  assertEquals(testConfig(ws).trust.state, "trusted");
  assertStringIncludes((await pml(ws, "untrust")).stdout, "Forgot");
  assertEquals(testConfig(ws).trust.state, "untrusted");
});

Deno.test("trust: on a terminal pml trust asks, and only yes trusts", async () => {
  await using ws = tempWorkspace();
  cloned(ws, { approvals: "agent" });
  const run = async (answer: string) => {
    let out = "";
    const io: CliIo = {
      env: { PML_WORKSPACE: ws.dir, HOME: ws.home },
      cwd: ws.dir,
      home: ws.home,
      stdout: (t) => (out += t),
      stderr: (t) => (out += t),
      prompt: () => Promise.resolve(answer),
      isTerminal: true,
    };
    return { code: await runCli(["trust"], io), out };
  };
  assertEquals((await run("n")).code, 1);
  assertEquals(testConfig(ws).trust.state, "untrusted");
  const yes = await run("y");
  assertEquals(yes.code, 0, yes.out);
  assertEquals(testConfig(ws).approvals, "agent");
});

Deno.test("trust: a file that widens nothing applies without trust (deny, ask, read tools, approvals human, grants inside)", async () => {
  await using ws = tempWorkspace();
  Deno.mkdirSync(join(ws.dir, "data"));
  cloned(ws, {
    approvals: "human",
    port: 4100,
    permissions: { allow: ["filesystem:read_file"], ask: ["json"], deny: ["shell"] },
    sandbox: { write: ["data"] },
  });
  const c = testConfig(ws);
  assertEquals(c.trust.state, "narrow");
  assertEquals(c.permissions.allow, ["filesystem:read_file"], "narrower than the defaults");
  assertEquals(c.permissions.deny, ["shell"]);
  assertEquals(c.approvals, "human");
  assertEquals(c.port, 4100);
  assertEquals(c.sandbox.write, [join(ws.dir, "data")]);
  assertEquals(trustNotice(c), undefined);
});

Deno.test('trust: "always" keeps a trusted file trusted, and leaves an untrusted one untrusted', async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["json"], ask: [], deny: [] } });
  const elicit = () => "always" as const;
  {
    await using g = await gatewayFor(ws, { elicit });
    await g.client.callTool({ name: "math:add", arguments: { a: 1, b: 2 } }).catch(() => {});
    await g.client.callTool({
      name: "filesystem:write_file",
      arguments: { path: "a.txt", content: "x" },
    });
  }
  const text = ws.read(".pml.json");
  assertStringIncludes(text, '"filesystem:write_file"');
  assertEquals(testConfig(ws).trust.state, "trusted", "pml's own write stays trusted");
  assertEquals(readTrusted(join(ws.home, ".pml"))[ws.dir].sha256, contentHash(text));

  cloned(ws, { permissions: { allow: ["json", "text"], ask: [], deny: [] } });
  {
    await using g = await gatewayFor(ws, { elicit });
    await g.client.callTool({
      name: "filesystem:write_file",
      arguments: { path: "b.txt", content: "x" },
    });
  }
  assertStringIncludes(ws.read(".pml.json"), '"filesystem:write_file"');
  assertEquals(testConfig(ws).trust.state, "untrusted", "one decision does not vouch for the rest");
});

Deno.test("trust: pml init trusts the file it writes, not one it keeps", async () => {
  await using ws = tempWorkspace();
  const wrote = await pml(ws, "init", "--yes");
  assertEquals(wrote.code, 0, wrote.stderr);
  assertEquals(testConfig(ws).trust.state, "trusted");
  await using other = tempWorkspace();
  cloned(other, WIDE);
  const kept = await pml(other, "init", "--yes");
  assertStringIncludes(kept.stdout, "`pml trust`");
  assertEquals(testConfig(other).trust.state, "untrusted");
});

Deno.test("trust: lockfile.maxAgeDays below the default widens (pins re-pinned unasked sooner); 0 or more narrows and applies", async () => {
  await using ws = tempWorkspace();
  cloned(ws, { lockfile: { maxAgeDays: 1 } });
  const short = testConfig(ws);
  assertEquals(short.trust.state, "untrusted");
  assertStringIncludes(short.trust.widens.join("\n"), "lockfile.maxAgeDays 1");
  assertEquals(short.lockMaxAgeDays, 90, "the default until a human trusts it");
  for (const days of [0, 365]) {
    cloned(ws, { lockfile: { maxAgeDays: days } });
    const c = testConfig(ws);
    assertEquals(c.trust.state, "narrow");
    assertEquals(c.lockMaxAgeDays, days);
  }
  cloned(ws, { lockfile: { maxAgeDays: 0 }, env: ["OPENAI_API_KEY"] });
  assertEquals(testConfig(ws).lockMaxAgeDays, 0, "kept while the rest waits for trust");
});

Deno.test("trust: a record written before the Web Crypto hash (node:crypto's hex) is still trusted, by loadConfig and loadConfigAsync alike", async () => {
  await using ws = tempWorkspace();
  // Not ASCII: the hash is over the UTF-8 bytes, as node:crypto's `update(text)` took them.
  const text = cloned(ws, {
    permissions: { allow: ["filesystem"], ask: [], deny: [] },
    sandbox: { deny: ["dossier-é🙂"] },
  });
  const pmlHome = join(ws.home, ".pml");
  Deno.mkdirSync(pmlHome, { recursive: true });
  // The trust store as the earlier code wrote it (`createHash("sha256").update(text)`).
  const old = { sha256: createHash("sha256").update(text).digest("hex"), trustedAt: "2026-01-01" };
  Deno.writeTextFileSync(
    join(pmlHome, "trusted.json"),
    JSON.stringify({ version: 1, workspaces: { [ws.dir]: old } }),
  );
  const sources = { env: { HOME: ws.home, PML_WORKSPACE: ws.dir }, cwd: ws.dir, home: ws.home };
  const sync = loadConfig(sources);
  const viaWebCrypto = await loadConfigAsync(sources);
  assertEquals(viaWebCrypto.trust, { ...sync.trust, hash: old.sha256 });
  assertEquals(viaWebCrypto.trust.state, "trusted");
  assertEquals(viaWebCrypto.permissions.allow, ["filesystem"]);
  assertEquals({ ...viaWebCrypto, env: {} }, { ...sync, env: {} });

  cloned(ws, { permissions: { allow: ["filesystem", "shell"], ask: [], deny: [] } });
  assertEquals((await loadConfigAsync(sources)).trust.state, "untrusted", "other content");
});

Deno.test("trust: a hand edit of trusted content is judged against it: a changed private server, a new grant, a new cloudUrl naming a ${VAR} wait; what was trusted and what narrows apply", async () => {
  const mcp = (args: string[]) => ({ type: "stdio", install: { command: "node", args } });
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem", "srv"], ask: [], deny: [] },
    sandbox: { net: ["127.0.0.1:4873"] },
    private_mcps: { srv: mcp(["srv.js"]), other: mcp(["other.js"]) },
  });
  cloned(ws, {
    permissions: { allow: ["filesystem", "srv", "shell"], ask: [], deny: ["filesystem:move_file"] },
    sandbox: { net: ["127.0.0.1:4873", "127.0.0.1:9999"] },
    private_mcps: { srv: mcp(["srv.js"]), other: mcp(["evil.js"]) },
  });
  const c = testConfig(ws);
  assertEquals(c.trust.state, "untrusted");
  assertEquals(c.trust.edited, true);
  assertEquals(c.trust.widens, [
    'permissions.allow "shell" (beyond the read tools)',
    'sandbox.net "127.0.0.1:9999"',
    "private_mcps.other (runs node evil.js)",
    "private_mcps.other (changed since it was trusted)",
  ]);
  assertEquals(c.permissions.allow, ["filesystem", "srv"]);
  assertEquals(c.permissions.deny, ["filesystem:move_file"]);
  assertEquals(c.sandbox.net, ["127.0.0.1:4873"]);
  assertEquals(Object.keys(c.privateMcps), ["srv"]);
  assertStringIncludes(trustNotice(c)!, "changed since a human trusted it");

  // A new cloudUrl naming a variable waits, unexpanded; the rest applies as trusted.
  cloned(ws, {
    permissions: { allow: ["filesystem", "srv"], ask: [], deny: [] },
    sandbox: { net: ["127.0.0.1:4873"] },
    private_mcps: { srv: mcp(["srv.js"]), other: mcp(["other.js"]) },
    cloudUrl: "${COLLECTOR}",
  });
  const v = testConfig(ws, { COLLECTOR: "https://collector.example" });
  assertEquals(v.trust.state, "untrusted");
  assert(
    v.trust.widens.every((w) => w.startsWith('cloudUrl "${COLLECTOR}"')),
    v.trust.widens.join(),
  );
  assert(!v.cloudUrl.includes("collector"), v.cloudUrl);
  assertEquals(v.permissions.allow, ["filesystem", "srv"]);
  assert(!trustNotice(v)!.includes("collector.example"), "no value of the variable is quoted");
});
