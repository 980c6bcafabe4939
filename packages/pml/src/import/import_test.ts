/**
 * `pml import` from every client's own file (tests/fixtures/import/), a server.json, and the user's
 * files: what is shown, what `.pml.json` gets (names of variables, never values), `--move`.
 * Packages are pinned by an injected resolver here; tests/e2e/import_test.ts uses npm itself.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import type { CliIo } from "../cli/io.ts";
import { type Pinner, runImport } from "../cli/import.ts";
import type { NpmResolver } from "../deps/npm_resolver.ts";
import { PmlError } from "../errors.ts";
import { withoutTomlTables } from "./client_files.ts";
import { urlSecrets } from "./url_secrets.ts";

const FIXTURES = join(import.meta.dirname!, "..", "..", "..", "..", "tests", "fixtures", "import");
const INTEGRITY = "sha512-" + "A".repeat(86) + "==";

/** Pins `latest` to 9.9.9 and any other spec to itself; `missing-*` packages do not exist. */
const resolver: NpmResolver = {
  resolve: (name, spec) =>
    name.startsWith("missing-")
      ? Promise.reject(new PmlError("DEPENDENCY_RESOLVE_FAILED", `Cannot resolve ${name}@${spec}`))
      : Promise.resolve({
        name,
        version: spec === "latest" ? "9.9.9" : spec,
        integrity: INTEGRITY,
      }),
};

/** Pinning (install, start, read tools) is tested end to end in tests/e2e/import_test.ts. */
const pinner = () => Promise.resolve(true);

function copyTree(from: string, to: string) {
  for (const e of Deno.readDirSync(from)) {
    const src = join(from, e.name), dst = join(to, e.name);
    if (e.isDirectory) {
      Deno.mkdirSync(dst, { recursive: true });
      copyTree(src, dst);
    } else Deno.copyFileSync(src, dst);
  }
}

function cli(
  ws: { dir: string; home: string },
  answers?: string[],
  env: Record<string, string> = {},
) {
  const out: string[] = [];
  const io: CliIo = {
    env: { PML_WORKSPACE: ws.dir, ...env },
    cwd: ws.dir,
    home: ws.home,
    stdout: (t) => out.push(t),
    stderr: (t) => out.push(t),
    prompt: answers ? (q) => (out.push(q), Promise.resolve(answers.shift() ?? "")) : undefined,
    isTerminal: answers !== undefined,
  };
  return { io, text: () => out.join("") };
}

async function imported(fixture: string, client: string) {
  await using ws = tempWorkspace();
  copyTree(join(FIXTURES, fixture), ws.dir);
  const c = cli(ws);
  const code = await runImport({
    from: { client: client as "claude" },
    yes: true,
    move: false,
    resolver,
    pinner,
  }, c.io);
  return { code, out: c.text(), pml: JSON.parse(ws.read(".pml.json")) };
}

Deno.test("import --from claude: npx pinned, remote http and sse, raw command; pml's own entry skipped; no values written", async () => {
  const { code, out, pml } = await imported("claude", "claude");
  assertEquals(code, 0, out);
  const m = pml.private_mcps;
  assertEquals(Object.keys(m).sort(), ["docs-api", "events", "knowledge", "py-tools"]);
  assertEquals(m.knowledge.type, "stdio");
  assertEquals(m.knowledge.install, {
    command: "npx",
    args: ["-y", "@modelcontextprotocol/server-memory@2026.8.31"],
    envRequired: ["MEMORY_FILE_PATH"],
  });
  assertEquals(m.knowledge.package, {
    name: "@modelcontextprotocol/server-memory",
    version: "2026.8.31",
    integrity: INTEGRITY,
  });
  assertEquals(m["docs-api"], {
    type: "http",
    description: 'Imported from claude (.mcp.json: "docs-api")',
    proxyTo: "https://mcp.example.test/mcp",
    transport: "streamable-http",
    headers: { Authorization: "Bearer {DOCS_TOKEN}" },
    envRequired: ["DOCS_TOKEN"],
  });
  assertEquals(m.events.transport, "sse");
  assertEquals(m["py-tools"].install, {
    command: "uvx",
    args: ["mcp-server-time", "--local-timezone=UTC"],
    envRequired: [],
  });
  assert(!("tools" in m.knowledge), "no tool list is declared: the server's own is read");
  assertStringIncludes(out, 'Skipped "pml" (.mcp.json): PML\'s own entry');
  assertStringIncludes(out, "npm package, pinned: @modelcontextprotocol/server-memory@2026.8.31");
  assertStringIncludes(out, "env:      MEMORY_FILE_PATH (names only)");
  assert(!JSON.stringify(pml).includes("/tmp/knowledge.jsonl"), "values never reach .pml.json");
  assert(!out.includes("/tmp/knowledge.jsonl"), "values are never shown");
});

Deno.test("import --from cursor: ${env:X} refs, a literal header becomes a variable, '.' becomes a workspace grant", async () => {
  const { code, out, pml } = await imported("cursor", "cursor");
  assertEquals(code, 0, out);
  const m = pml.private_mcps;
  assertEquals(Object.keys(m).sort(), ["files", "remote-search"]);
  assertEquals(m.files.install.envRequired, ["API_TOKEN"]);
  assertEquals(m.files.permissions.read, ["${workspace}"]);
  assertEquals(m.files.permissions.write, ["${packageDir}", "${workspace}"]);
  assertEquals(m["remote-search"].headers, { "X-Api-Key": "{REMOTE_SEARCH_X_API_KEY}" });
  assert(!JSON.stringify(pml).includes("sk-literal-secret"));
  assert(!out.includes("sk-literal-secret"));
  assertStringIncludes(out, "Set ");
  assertStringIncludes(out, "REMOTE_SEARCH_X_API_KEY");
});

Deno.test("import --from vscode: servers with inputs, ${workspaceFolder} becomes ${workspace}", async () => {
  const { code, pml } = await imported("vscode", "vscode");
  assertEquals(code, 0);
  const m = pml.private_mcps;
  assertEquals(m.everything.package.name, "@modelcontextprotocol/server-everything");
  assertEquals(m.github.headers, { Authorization: "Bearer {GITHUB_TOKEN}" });
  assertEquals(m.github.envRequired, ["GITHUB_TOKEN"]);
  assertEquals(m["local-script"].install.args, ["${workspace}/server.mjs"]);
});

Deno.test("import --from gemini: httpUrl is Streamable HTTP, url is SSE, $VAR refs, disabled skipped", async () => {
  const { code, out, pml } = await imported("gemini", "gemini");
  assertEquals(code, 0);
  const m = pml.private_mcps;
  assertEquals(Object.keys(m).sort(), ["legacy-sse", "memory", "streamer"]);
  assertEquals(m.streamer.transport, "streamable-http");
  assertEquals(m.streamer.headers, { Authorization: "Bearer {STREAM_TOKEN}" });
  assertEquals(m["legacy-sse"].transport, "sse");
  assertStringIncludes(out, 'Skipped "off"');
});

Deno.test("import --from codex: TOML tables, quoted names, env_vars and bearer_token_env_var", async () => {
  const { code, pml } = await imported("codex", "codex");
  assertEquals(code, 0);
  const m = pml.private_mcps;
  assertEquals(Object.keys(m).sort(), ["figma", "memory", "time-tools"]);
  assertEquals(m.memory.install.envRequired.sort(), ["LOG_LEVEL", "MEMORY_FILE_PATH"]);
  assertEquals(m.figma.headers, { Authorization: "Bearer {FIGMA_TOKEN}" });
  assertEquals(m["time-tools"].install.command, "uvx");
});

Deno.test("import --from opencode and qwen: their own formats", async () => {
  const oc = await imported("opencode", "opencode");
  assertEquals(oc.code, 0);
  assertEquals(oc.pml.private_mcps.memory.package.version, "2026.8.31");
  assertEquals(oc.pml.private_mcps.context.headers, { Authorization: "Bearer {CONTEXT_KEY}" });
  const qw = await imported("qwen", "qwen");
  assertEquals(
    qw.pml.private_mcps.memory.install.args[1],
    "@modelcontextprotocol/server-memory@2026.8.31",
  );
});

Deno.test("import --from claude reads ~/.claude.json: this project's entry and the user's, not another project's", async () => {
  await using ws = tempWorkspace();
  ws.write(".gitkeep", "");
  Deno.writeTextFileSync(
    join(ws.home, ".claude.json"),
    Deno.readTextFileSync(join(FIXTURES, "home", ".claude.json")).replace("/WORKSPACE", ws.dir),
  );
  const c = cli(ws);
  assertEquals(
    await runImport({ from: { client: "claude" }, yes: true, move: false, resolver, pinner }, c.io),
    0,
  );
  const m = JSON.parse(ws.read(".pml.json")).private_mcps;
  assertEquals(Object.keys(m).sort(), ["project-everything", "user-memory"]);
  assertEquals(m["user-memory"].package.version, "2026.8.31");
});

Deno.test("import server.json: an npm package (optional variables passed, not required) and a remote with variables", async () => {
  await using ws = tempWorkspace();
  const c = cli(ws);
  const code = await runImport({
    from: { path: join(FIXTURES, "server.json") },
    yes: true,
    move: false,
    resolver,
    pinner,
  }, c.io);
  assertEquals(code, 0, c.text());
  const mem = JSON.parse(ws.read(".pml.json")).private_mcps["server-memory"];
  assertEquals(mem.description, "Knowledge graph memory for agents, kept in a JSONL file.");
  assertEquals(mem.install, {
    command: "npx",
    args: ["-y", "@modelcontextprotocol/server-memory@2026.8.31"],
    envRequired: [],
  });
  assertEquals(mem.permissions.env, ["MEMORY_FILE_PATH"]);
  const c2 = cli(ws);
  assertEquals(
    await runImport({
      from: { path: join(FIXTURES, "server-remote.json") },
      yes: true,
      move: false,
      resolver,
      pinner,
    }, c2.io),
    0,
  );
  const weather = JSON.parse(ws.read(".pml.json")).private_mcps.weather;
  assertEquals(weather.proxyTo, "https://weather.example.test/mcp");
  assertEquals(weather.headers, { "X-Api-Key": "{X_API_KEY}" });
  assertEquals(weather.envRequired, ["X_API_KEY"]);
  assert(
    JSON.parse(ws.read(".pml.json")).private_mcps["server-memory"],
    "the first import is kept",
  );
});

Deno.test("import: asks on a terminal (no → nothing written); without a terminal nor --yes it refuses; re-import keeps what exists", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["x"], ask: [], deny: [] } });
  copyTree(join(FIXTURES, "qwen"), ws.dir);
  const no = cli(ws, ["n"]);
  assertEquals(
    await runImport({ from: { client: "qwen" }, yes: false, move: false, resolver, pinner }, no.io),
    0,
  );
  assertStringIncludes(no.text(), "Nothing written");
  assert(!ws.read(".pml.json").includes("private_mcps"));
  const noTerm = cli(ws);
  const err = await runImport(
    { from: { client: "qwen" }, yes: false, move: false, resolver, pinner },
    noTerm.io,
  ).catch((e) => e);
  assert(err instanceof PmlError && err.code === "IMPORT_NOT_CONFIRMED");
  const yes = cli(ws, ["y"]);
  assertEquals(
    await runImport(
      { from: { client: "qwen" }, yes: false, move: false, resolver, pinner },
      yes.io,
    ),
    0,
  );
  const pml = JSON.parse(ws.read(".pml.json"));
  assertEquals(pml.permissions.allow, ["x"], "other keys kept");
  assert(pml.private_mcps.memory);
  const again = cli(ws);
  assertEquals(
    await runImport(
      { from: { client: "qwen" }, yes: true, move: false, resolver, pinner },
      again.io,
    ),
    0,
  );
  assertStringIncludes(again.text(), "is in .pml.json already");
});

Deno.test("import: a package that does not resolve is reported and the others are imported (exit 1)", async () => {
  await using ws = tempWorkspace();
  ws.write(
    ".mcp.json",
    JSON.stringify({
      mcpServers: {
        bad: { command: "npx", args: ["-y", "missing-pkg@1.0.0"] },
        good: { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory@2026.8.31"] },
      },
    }),
  );
  const c = cli(ws);
  assertEquals(
    await runImport({ from: { client: "claude" }, yes: true, move: false, resolver, pinner }, c.io),
    1,
  );
  assertStringIncludes(c.text(), 'Skipped "bad" (.mcp.json): Cannot resolve missing-pkg@1.0.0');
  assertEquals(Object.keys(JSON.parse(ws.read(".pml.json")).private_mcps), ["good"]);
});

Deno.test("import --move: removed from the client's file with a backup; values move into pml's own entry", async () => {
  await using ws = tempWorkspace();
  copyTree(join(FIXTURES, "cursor"), ws.dir);
  const before = ws.read(".cursor/mcp.json");
  const c = cli(ws);
  assertEquals(
    await runImport({ from: { client: "cursor" }, yes: true, move: true, resolver, pinner }, c.io),
    0,
  );
  assertEquals(ws.read(".cursor/mcp.json.backup"), before);
  const after = JSON.parse(ws.read(".cursor/mcp.json"));
  assertEquals(Object.keys(after.mcpServers), ["pml"]);
  assertEquals(after.mcpServers.pml.env, {
    PML_WORKSPACE: "${workspaceFolder}",
    API_TOKEN: "${env:MY_TOKEN}",
    REMOTE_SEARCH_X_API_KEY: "sk-literal-secret",
  });
  assert(!ws.read(".pml.json").includes("sk-literal-secret"));
});

Deno.test("import --move: the variables moved into pml's entry are not asked for again, and the set-up runs with the values written as they are", async () => {
  await using ws = tempWorkspace();
  copyTree(join(FIXTURES, "cursor"), ws.dir);
  const c = cli(ws);
  let setupEnv: Record<string, string | undefined> = {};
  const seeing: Pinner = (_servers, io) => (setupEnv = io.env, Promise.resolve(true));
  assertEquals(
    await runImport(
      { from: { client: "cursor" }, yes: true, move: true, resolver, pinner: seeing },
      c.io,
    ),
    0,
  );
  assertStringIncludes(c.text(), "Moved their variables (API_TOKEN, REMOTE_SEARCH_X_API_KEY)");
  assert(!/Set [^\n]*(API_TOKEN|REMOTE_SEARCH_X_API_KEY)/.test(c.text()), c.text());
  assertEquals(setupEnv.REMOTE_SEARCH_X_API_KEY, "sk-literal-secret");
  assertEquals(setupEnv.API_TOKEN, undefined, "${env:MY_TOKEN} is the client's to expand");
});

Deno.test("import --move from Codex TOML: the tables and their sub-tables go, comments and others stay", async () => {
  await using ws = tempWorkspace();
  copyTree(join(FIXTURES, "codex"), ws.dir);
  const c = cli(ws);
  assertEquals(
    await runImport({ from: { client: "codex" }, yes: true, move: true, resolver, pinner }, c.io),
    0,
  );
  const toml = ws.read(".codex/config.toml");
  assertStringIncludes(toml, "# Codex configuration");
  assertStringIncludes(toml, "[mcp_servers.pml]");
  assertStringIncludes(toml, "[profiles.fast]");
  assert(
    !toml.includes("server-memory") && !toml.includes("LOG_LEVEL") && !toml.includes("figma"),
    toml,
  );
  assert(!toml.includes('"time tools"'));
  assertStringIncludes(c.text(), "Set ");
  assertEquals(withoutTomlTables("[a.b]\nx=1\n[a.c]\ny=2\n", "a", ["b"]), "[a.c]\ny=2\n");
});

Deno.test("import of a file that holds no server says what it looked for", async () => {
  await using ws = tempWorkspace();
  const path = ws.write("nothing.json", JSON.stringify({ hello: 1 }));
  const err = await runImport(
    { from: { path }, yes: true, move: false, resolver, pinner },
    cli(ws).io,
  )
    .catch((e) => e);
  assert(err instanceof PmlError);
  assertStringIncludes(err.message, "holds no MCP server PML can read");
});

Deno.test("init offers the import when the agents have servers of their own (and says how without a terminal)", async () => {
  await using ws = tempWorkspace();
  copyTree(join(FIXTURES, "gemini"), ws.dir);
  const { runInit } = await import("../cli/init.ts");
  const plain = cli(ws);
  assertEquals(await runInit({ yes: true, transport: "stdio", launcher: "pml" }, plain.io), 0);
  assertStringIncludes(
    plain.text(),
    "Your agents run 3 MCP server(s) of their own: memory, streamer, legacy-sse",
  );
  assertStringIncludes(plain.text(), "Run `pml import`");
  const asked = cli(ws, ["", "n"]);
  assertEquals(await runInit({ yes: false, transport: "stdio", launcher: "pml" }, asked.io), 0);
  assertStringIncludes(asked.text(), "Review and import them into PML now? [y/N]");
  assert(!ws.read(".pml.json").includes("private_mcps"));
});

Deno.test("import into a .pml.json nobody trusted: written, said to need `pml trust`, nothing set up", async () => {
  await using ws = tempWorkspace();
  copyTree(join(FIXTURES, "qwen"), ws.dir);
  // Written behind PML's back (not through the trusting helper): it widens, and nobody trusted it.
  Deno.writeTextFileSync(join(ws.dir, ".pml.json"), JSON.stringify({ approvals: "agent" }));
  const c = cli(ws);
  let setUp = 0;
  const counting = () => (setUp++, Promise.resolve(true));
  assertEquals(
    await runImport(
      { from: { client: "qwen" }, yes: true, move: false, resolver, pinner: counting },
      c.io,
    ),
    0,
  );
  assertStringIncludes(c.text(), "is not trusted yet");
  assertStringIncludes(c.text(), "`pml trust`");
  assertEquals(setUp, 0, "an untrusted file's servers are not installed or started");
  assert(JSON.parse(ws.read(".pml.json")).private_mcps.memory);
});

Deno.test("import from every client: a remote server with no token of its own is said to ask its user to sign in on first use; one with an Authorization header is not", async () => {
  // `linear` has no token of its own; `keyed` sends one from a variable.
  const two = (list: string, url: string, extra: Record<string, string>, auth: string) =>
    JSON.stringify({
      [list]: {
        linear: { ...extra, [url]: "https://l.example.test/mcp" },
        keyed: { ...extra, [url]: "https://k.example.test/mcp", headers: { Authorization: auth } },
      },
    });
  const files: Record<string, [string, string]> = {
    claude: [".mcp.json", two("mcpServers", "url", { type: "http" }, "Bearer ${K}")],
    cursor: [".cursor/mcp.json", two("mcpServers", "url", {}, "Bearer ${env:K}")],
    vscode: [".vscode/mcp.json", two("servers", "url", { type: "http" }, "Bearer ${env:K}")],
    gemini: [".gemini/settings.json", two("mcpServers", "httpUrl", {}, "Bearer $K")],
    qwen: [".qwen/settings.json", two("mcpServers", "httpUrl", {}, "Bearer $K")],
    opencode: ["opencode.json", two("mcp", "url", { type: "remote" }, "Bearer {env:K}")],
    codex: [
      ".codex/config.toml",
      `[mcp_servers.linear]\nurl = "https://l.example.test/mcp"\n\n[mcp_servers.keyed]\n` +
      `url = "https://k.example.test/mcp"\nbearer_token_env_var = "K"\n`,
    ],
  };
  for (const [client, [path, text]] of Object.entries(files)) {
    await using ws = tempWorkspace();
    ws.write(path, text);
    const c = cli(ws);
    const code = await runImport(
      { from: { client: client as "claude" }, yes: true, move: false, resolver, pinner },
      c.io,
    );
    const out = c.text();
    assertEquals(code, 0, `${client}: ${out}`);
    const m = JSON.parse(ws.read(".pml.json")).private_mcps;
    assertEquals(m.linear?.type, "http", `${client}: ${out}`);
    assertEquals(
      m.keyed?.headers?.Authorization?.startsWith("Bearer {"),
      true,
      `${client}: ${out}`,
    );
    assertStringIncludes(
      out,
      "asks you to sign in on first use (the call waits; run `pml auth linear`",
    );
    assert(!out.includes("pml auth keyed"), `${client}: the keyed server signs in with its header`);
    assertStringIncludes(out, "linear: each asks you to sign in on first use");
  }
});

Deno.test("urlSecrets: userinfo and key-like query values become variables; references stay theirs; the rest is kept", () => {
  const none = () => undefined;
  assertEquals(
    urlSecrets("https://tok%40en@h.test/mcp?lang=en&access_token=abc#x", "api", none),
    {
      url: "https://{API_URL_USER}@h.test/mcp?lang=en&access_token={API_ACCESS_TOKEN}#x",
      names: ["API_URL_USER", "API_ACCESS_TOKEN"],
      values: { API_URL_USER: "tok@en", API_ACCESS_TOKEN: "abc" },
    },
  );
  const keyShaped = urlSecrets(
    "https://h.test/mcp?k=ghp_abc&id=a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7",
    "s",
    none,
  );
  assertEquals(keyShaped.url, "https://h.test/mcp?k={S_K}&id={S_ID}");
  const ref = urlSecrets(
    "https://h.test/mcp?api_key=${MY_KEY}",
    "s",
    (v) => v === "${MY_KEY}" ? "MY_KEY" : undefined,
  );
  assertEquals(ref, { url: "https://h.test/mcp?api_key={MY_KEY}", names: ["MY_KEY"], values: {} });
  assertEquals(urlSecrets("https://h.test/mcp?page=2", "s", none).url, "https://h.test/mcp?page=2");
});
