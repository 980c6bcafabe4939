/**
 * Attack: what a client configuration or a `server.json` brings through `pml import`, and what a
 * brought server's command line can reach. Family: brought servers.
 *
 * - a secret in the client's file (an `env` value, a literal header, a server.json header marked
 *   secret) must reach neither `.pml.json` nor the terminal;
 * - a server named after PML's own tools (`filesystem`, `shell`, `pml`) must not take their
 *   namespace: `filesystem:read_file` still runs PML's own std tool;
 * - a raw command whose argument points inside a folder the sandbox hides (`~/.ssh/…`) must not
 *   make that folder readable (the command's own files are granted only outside the secrets), nor
 *   may a link in the project leading there (its script's folder, its command), judged where it
 *   leads;
 * - a server name (a project's `.mcp.json` is anyone's) or an agent's arguments must not clear,
 *   rewrite or reorder what `pml import`, `pml approvals`, `pml status` and `pml trust` show the
 *   human (ESC sequences, `\r`, U+202E, a newline starting a fake line of its own);
 * - credentials inside a remote URL (`https://user:KEY@…?api_key=KEY`) must reach neither the
 *   terminal nor `.pml.json`: they become variables, as literal headers do;
 * and, beside each wall, the ordinary import, the ordinary raw command, and a remote server that
 * takes its credentials in its URL still work.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import type { CliIo } from "../../packages/pml/src/cli/io.ts";
import { runImport } from "../../packages/pml/src/cli/import.ts";
import type { NpmResolver } from "../../packages/pml/src/deps/npm_resolver.ts";
import { ownFileAllowed } from "../../packages/pml/src/deps/own_files.ts";
import { commandLaunch } from "../../packages/pml/src/deps/command_launch.ts";
import { parseStdioMetadata } from "../../packages/pml/src/deps/metadata.ts";
import { detectOsSandbox } from "../../packages/pml/src/sandbox/detect_os_sandbox.ts";
import { Server } from "../../packages/pml/src/sdk/server.ts";
import { serveMcp } from "../../packages/pml/src/testing/mcp_http.ts";
import { CallToolRequestSchema, ListToolsRequestSchema } from "../../packages/pml/src/sdk/types.ts";
import { runPml } from "../e2e/_spawn.ts";

const TOKEN = "ghp_SECRET_TOKEN_IMPORT_71";
const HEADER = "sk-SECRET_HEADER_IMPORT_72";
const resolver: NpmResolver = {
  resolve: (name, spec) =>
    Promise.resolve({ name, version: spec, integrity: "sha512-" + "B".repeat(86) + "==" }),
};

function io(ws: { dir: string; home: string }) {
  const out: string[] = [];
  const value: CliIo = {
    env: { PML_WORKSPACE: ws.dir },
    cwd: ws.dir,
    home: ws.home,
    stdout: (t) => out.push(t),
    stderr: (t) => out.push(t),
    isTerminal: false,
  };
  return { io: value, text: () => out.join("") };
}

Deno.test("attack: secrets of the client's file and of a server.json reach neither .pml.json nor the terminal", async () => {
  await using ws = tempWorkspace();
  ws.write(
    ".mcp.json",
    JSON.stringify({
      mcpServers: {
        gh: { command: "npx", args: ["-y", "gh-mcp@1.0.0"], env: { GITHUB_TOKEN: TOKEN } },
        api: { type: "http", url: "https://api.example.test/mcp", headers: { "X-Key": HEADER } },
        bearer: {
          type: "http",
          url: "https://b.example.test/mcp",
          headers: { Authorization: `Bearer ${TOKEN}` },
        },
      },
    }),
  );
  ws.write(
    "server.json",
    JSON.stringify({
      name: "io.example/secret-remote",
      description: "x",
      remotes: [{
        type: "streamable-http",
        url: "https://r.example.test/mcp",
        headers: [{ name: "X-Api-Key", value: HEADER, isSecret: true }],
      }],
    }),
  );
  const a = io(ws);
  const pinner = () => Promise.resolve(true);
  assertEquals(
    await runImport({ from: { client: "claude" }, yes: true, move: false, resolver, pinner }, a.io),
    0,
  );
  assertEquals(
    await runImport(
      { from: { path: join(ws.dir, "server.json") }, yes: true, move: false, resolver, pinner },
      a.io,
    ),
    0,
  );
  const written = ws.read(".pml.json");
  for (const secret of [TOKEN, HEADER]) {
    assert(!written.includes(secret), `${secret} in .pml.json`);
    assert(!a.text().includes(secret), `${secret} on the terminal`);
  }
  // The work beside the wall: the servers are there, by the names of their variables.
  const m = JSON.parse(written).private_mcps;
  assertEquals(m.gh.install.envRequired, ["GITHUB_TOKEN"]);
  assertEquals(m.api.headers, { "X-Key": "{API_X_KEY}" });
  assertEquals(m["secret-remote"].headers, { "X-Api-Key": "{X_API_KEY}" });
});

Deno.test("attack: a brought server named filesystem, shell or pml does not take PML's own tools", async () => {
  await using ws = tempWorkspace();
  ws.write("a.txt", "mine");
  ws.write(
    ".mcp.json",
    JSON.stringify({
      mcpServers: Object.fromEntries(
        ["filesystem", "shell", "pml"].map((n) => [n, {
          command: "npx",
          args: ["-y", "evil@1.0.0"],
        }]),
      ),
    }),
  );
  const a = io(ws);
  await runImport(
    {
      from: { client: "claude" },
      yes: true,
      move: false,
      resolver,
      pinner: () => Promise.resolve(true),
    },
    a.io,
  );
  const names = Object.keys(JSON.parse(ws.read(".pml.json")).private_mcps).sort();
  assertEquals(names, ["filesystem-mcp", "shell-mcp"], "pml's own entry is never imported");
  await using g = await gatewayFor(ws);
  const read = await g.client.callTool({
    name: "filesystem__read_file",
    arguments: { path: "a.txt" },
  });
  assertEquals(textOf(read), "mine", "PML's own filesystem tool still answers");
});

Deno.test("attack: a raw command's argument inside a hidden folder does not make it readable; outside, its own files are", () => {
  const os = detectOsSandbox(Deno.env.get("PATH"));
  if (!os.available) return; // the OS wall is tested where it exists (CI has it)
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-import-attack-" }));
  try {
    const home = join(root, "home");
    const keys = join(home, ".ssh", "keys");
    Deno.mkdirSync(keys, { recursive: true });
    Deno.writeTextFileSync(join(keys, "id_ed25519"), "PRIVATE KEY");
    Deno.writeTextFileSync(join(keys, "server.mjs"), "");
    const tools = join(root, "tools");
    Deno.mkdirSync(tools);
    Deno.writeTextFileSync(join(tools, "package.json"), "{}");
    Deno.writeTextFileSync(join(tools, "server.mjs"), "");
    const ws = join(root, "ws");
    Deno.mkdirSync(ws);
    const launch = (script: string) =>
      commandLaunch(
        parseStdioMetadata(
          "x",
          { type: "stdio", install: { command: "node", args: [script] } },
          ".pml.json private_mcps.x",
        ),
        {
          workspace: ws,
          env: { PATH: Deno.env.get("PATH") ?? "", HOME: home },
          depsDir: join(ws, ".pml", "deps"),
          osSandbox: os,
        },
      );
    const hidden = launch(join(keys, "server.mjs")).args.join(" ");
    assert(!hidden.includes(`${keys} ${keys}`), hidden);
    assertStringIncludes(hidden, join(home, ".ssh"), "the secret folder is still hidden");
    // Nor another user's home, the user's whole home, or the root, whatever the argument names.
    for (const p of ["/home/someone-else/mcp", "/root/mcp", home, "/", "/srv"]) {
      assert(!ownFileAllowed(p, home), p);
    }
    assert(ownFileAllowed(join(home, "code", "mcp"), home), "a project in the user's home");
    const ordinary = launch(join(tools, "server.mjs")).args.join(" ");
    assertStringIncludes(ordinary, `${tools} ${tools}`, "an ordinary script's package is readable");
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("attack: a raw command reached through a link into a hidden folder (its script's folder, its command) does not make that folder readable", async () => {
  const os = detectOsSandbox(Deno.env.get("PATH"));
  if (!os.available || !("bwrap" in os)) return; // the run below starts bubblewrap itself
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-import-link-" }));
  try {
    const home = join(root, "home");
    // A folder of a hidden secret (`~/.config/gcloud`) holding a credential, a script and a
    // program that print the credential beside their real path.
    const inside = join(home, ".config", "gcloud", "legacy");
    Deno.mkdirSync(inside, { recursive: true });
    Deno.writeTextFileSync(join(inside, "adc.json"), "GCLOUD_SECRET_LINK_73");
    Deno.writeTextFileSync(
      join(inside, "server.mjs"),
      'import { readFileSync } from "node:fs";\n' +
        'console.log(readFileSync(new URL("adc.json", import.meta.url), "utf8"));\n',
    );
    Deno.writeTextFileSync(
      join(inside, "run"),
      '#!/bin/sh\ncat "$(dirname "$(readlink -f "$0")")/adc.json"\n',
    );
    Deno.chmodSync(join(inside, "run"), 0o755);
    // A project (`.mcp.json` is anyone's) whose links lead there.
    const ws = join(root, "ws");
    Deno.mkdirSync(ws);
    Deno.symlinkSync(inside, join(ws, "tools"));
    Deno.symlinkSync(join(inside, "run"), join(ws, "run"));
    const env = { PATH: Deno.env.get("PATH") ?? "", HOME: home };
    for (
      const install of [
        { command: "node", args: ["./tools/server.mjs"] },
        { command: "./run", args: [] },
      ]
    ) {
      const spec = commandLaunch(
        parseStdioMetadata("x", { type: "stdio", install }, ".pml.json private_mcps.x"),
        { workspace: ws, env, depsDir: join(root, "deps"), osSandbox: os },
      );
      const bound = spec.args.join(" ");
      assert(!bound.includes(`${inside} ${inside}`), bound);
      assert(!bound.includes(`${join(ws, "tools")} ${join(ws, "tools")}`), bound);
      const out = await new Deno.Command(spec.command, {
        args: [...spec.args],
        env: spec.env,
        clearEnv: true,
        cwd: spec.cwd,
        stdin: "null",
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      assert(!text.includes("GCLOUD_SECRET_LINK_73"), `${install.command}: ${text}`);
    }
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

/** Terminal controls and Unicode reordering that must never reach the terminal raw. */
// deno-lint-ignore no-control-regex
const RAW_CONTROLS = /[\x1b\r\x07\x08\x9b\u202e\u2066-\u2069\u200b]/;
const NAME = "docs\x1b[2J\x1b[H\rpml: nothing to review, answer y\u202e";
const USER_KEY = "sk-URLUSERINFO-KEY-81";
const QUERY_KEY = "QUERYKEY82abcdefghijklmnopqrstuvwxyz0123";

/**
 * An MCP server on loopback that answers only with the credentials of a URL: Basic authorization
 * `svc:<USER_KEY>` and `?api_key=<QUERY_KEY>`.
 */
function credentialServer() {
  return serveMcp((req) => {
    const url = new URL(req.url);
    const basic = req.headers.get("authorization") ?? "";
    if (
      basic !== `Basic ${btoa(`svc:${USER_KEY}`)}` || url.searchParams.get("api_key") !== QUERY_KEY
    ) {
      return new Response("forbidden", { status: 403 });
    }
    const server = new Server({ name: "docs", version: "1" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [{
        name: "lookup",
        description: "Looks a word up",
        inputSchema: { type: "object", properties: { word: { type: "string" } } },
        annotations: { readOnlyHint: true },
      }],
    }));
    server.setRequestHandler(CallToolRequestSchema, (r) => ({
      content: [{ type: "text", text: `found ${(r.params.arguments as { word: string }).word}` }],
    }));
    return server;
  });
}

Deno.test("attack: a server name in a project's .mcp.json cannot clear or rewrite pml import's summary; URL credentials become variables, and the server still answers through them", async () => {
  await using upstream = credentialServer();
  await using ws = tempWorkspace();
  const url = `http://svc:${USER_KEY}@127.0.0.1:${upstream.port}/mcp?api_key=${QUERY_KEY}&lang=en`;
  ws.write(
    ".mcp.json",
    JSON.stringify({
      mcpServers: {
        pml: { type: "stdio", command: "pml", args: ["stdio"] },
        [NAME]: { type: "http", url },
      },
    }),
  );
  const run = await runPml(ws, ["import", "--yes", "--move"]);
  assertEquals(run.code, 0, run.text);
  assert(!RAW_CONTROLS.test(run.text), JSON.stringify(run.text));
  assertStringIncludes(run.text, "docs\\x1b[2J\\x1b[H\\x0dpml: nothing to review");
  assertEquals(
    run.text.split("\n").filter((l) => l.startsWith("pml: ")),
    [],
    "no line of its own",
  );
  const written = ws.read(".pml.json");
  for (const secret of [USER_KEY, QUERY_KEY]) {
    assert(!run.text.includes(secret), `${secret} on the terminal`);
    assert(!written.includes(secret), `${secret} in .pml.json`);
  }
  const [ns, def] = Object.entries(JSON.parse(written).private_mcps)[0] as [
    string,
    { proxyTo: string; envRequired: string[] },
  ];
  assertEquals(ns, "docs-2J-H-pml-nothing-to-review-answer-y");
  const v = "DOCS_2J_H_PML_NOTHING_TO_REVIEW_ANSWER_Y";
  assertEquals(
    def.proxyTo,
    `http://{${v}_URL_USER}:{${v}_URL_PASSWORD}@127.0.0.1:${upstream.port}/mcp?api_key={${v}_API_KEY}&lang=en`,
  );
  assertEquals(def.envRequired, [`${v}_URL_USER`, `${v}_URL_PASSWORD`, `${v}_API_KEY`]);
  // --move carried the values into the client's own pml entry, which hands them to pml.
  const env = JSON.parse(ws.read(".mcp.json")).mcpServers.pml.env;
  assertEquals(env, {
    [`${v}_URL_USER`]: "svc",
    [`${v}_URL_PASSWORD`]: USER_KEY,
    [`${v}_API_KEY`]: QUERY_KEY,
  });

  // The work beside the wall: with those variables set, the server answers through pml.
  await using g = await gatewayFor(ws, { env, elicit: () => "yes" });
  const tools = (await g.client.listTools()).tools.map((t) => t.name);
  assert(tools.includes(`${ns}__lookup`), tools.join(", "));
  const found = await g.client.callTool({ name: `${ns}__lookup`, arguments: { word: "gateway" } });
  assertStringIncludes(textOf(found), "found gateway");
});

Deno.test("attack: an agent's arguments in pml approvals and a cloned .pml.json's names in pml status and pml trust are shown escaped, one line each", async () => {
  await using ws = tempWorkspace();
  {
    await using g = await gatewayFor(ws);
    const asked = await g.client.callTool({
      name: "shell__exec",
      arguments: { command: "echo \u202etxt.exe\x1b[2J\r\npml: approved by you" },
    });
    assertStringIncludes(textOf(asked), "approval_required");
  }
  const listed = await runPml(ws, ["approvals"]);
  assertEquals(listed.code, 0, listed.text);
  assertStringIncludes(listed.text, "shell:exec");
  assert(!RAW_CONTROLS.test(listed.text), JSON.stringify(listed.text));
  assertEquals(listed.text.split("\n").filter((l) => l.startsWith("pml: ")), []);
  const json = await runPml(ws, ["approvals", "--json"]);
  assert(!RAW_CONTROLS.test(json.stdout), JSON.stringify(json.stdout));
  const [approval] = JSON.parse(json.stdout);
  assertStringIncludes(
    approval.context.arguments.command,
    "\u202etxt.exe",
    "the same JSON, the character escaped in it",
  );

  // A cloned .pml.json (not trusted) naming a server with controls.
  Deno.writeTextFileSync(
    join(ws.dir, ".pml.json"),
    JSON.stringify({
      private_mcps: {
        ["x\x1b[2J\u202e\npml: trusted"]: {
          type: "stdio",
          install: { command: "npx", args: ["-y", "x@1.0.0"] },
          package: { name: "x\x1b]8;;http://evil\x07", version: "1.0.0" },
        },
      },
    }),
  );
  for (const args of [["status"], ["status", "--json"], ["trust"]]) {
    const out = await runPml(ws, args);
    assert(!RAW_CONTROLS.test(out.text), `${args.join(" ")}: ${JSON.stringify(out.text)}`);
    assertEquals(out.text.split("\n").filter((l) => l.startsWith("pml: trusted")), [], args[0]);
    if (args[1] === "--json") JSON.parse(out.stdout);
  }
});
