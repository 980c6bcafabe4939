/**
 * Attack: what a client configuration or a `server.json` brings through `pml import`, and what a
 * brought server's command line can reach. Family: brought servers.
 *
 * - a secret in the client's file (an `env` value, a literal header, a server.json header marked
 *   secret) must reach neither `.pml.json` nor the terminal;
 * - a server named after PML's own tools (`filesystem`, `shell`, `pml`) must not take their
 *   namespace: `filesystem:read_file` still runs PML's own std tool;
 * - a raw command whose argument points inside a folder the sandbox hides (`~/.ssh/…`) must not
 *   make that folder readable (the command's own files are granted only outside the secrets);
 * and, beside each wall, the ordinary import and the ordinary raw command still work.
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
import { commandLaunch, ownFileAllowed } from "../../packages/pml/src/deps/launch.ts";
import { parseStdioMetadata } from "../../packages/pml/src/deps/metadata.ts";
import { detectOsSandbox } from "../../packages/pml/src/sandbox/os_sandbox.ts";

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
