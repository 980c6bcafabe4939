import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import type { CliIo } from "./io.ts";
import { runCli } from "./run.ts";

function io(
  ws: { dir: string; home: string },
  opts: { answers?: string[]; env?: Record<string, string> } = {},
) {
  const out: string[] = [];
  const err: string[] = [];
  const answers = opts.answers;
  const value: CliIo = {
    env: { PML_WORKSPACE: ws.dir, ...opts.env },
    cwd: ws.dir,
    home: ws.home,
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    prompt: answers ? (q) => (out.push(q), Promise.resolve(answers.shift() ?? "")) : undefined,
    isTerminal: answers !== undefined,
  };
  return { io: value, out, err };
}

function treeText(dir: string): string {
  let all = "";
  for (const e of Deno.readDirSync(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) all += treeText(p);
    else if (e.isFile) all += Deno.readTextFileSync(p);
  }
  return all;
}

Deno.test("init --yes: writes .pml.json and .mcp.json with safe defaults", async () => {
  await using ws = tempWorkspace();
  const { io: cli } = io(ws);
  assertEquals(await runCli(["init", "--yes"], cli, "pml"), 0);
  const pml = JSON.parse(ws.read(".pml.json"));
  assertEquals(pml.workspace, ".");
  assert(pml.permissions.allow.includes("filesystem:read_file"));
  assert(pml.permissions.ask.includes("shell:exec"));
  assert(Array.isArray(pml.env));
  const mcp = JSON.parse(ws.read(".mcp.json"));
  // Claude Code's own syntax: it starts project servers in the project, and warns about
  // `${workspaceFolder}`, which only VS Code and Cursor expand.
  assertEquals(mcp.mcpServers.pml, { type: "stdio", command: "pml", args: ["stdio"] });
  assert(!ws.read(".mcp.json").includes("workspaceFolder"));
});

Deno.test("init --client: each client gets its own file in its own syntax; others are untouched", async () => {
  await using ws = tempWorkspace();
  ws.write(
    ".gemini/settings.json",
    JSON.stringify({ theme: "dark", mcpServers: { x: { command: "x" } } }),
  );
  ws.write(".codex/config.toml", '# mine\nmodel = "m"\n\n[mcp_servers.other]\ncommand = "o"\n');
  const { io: cli, out } = io(ws);
  assertEquals(
    await runCli(
      ["init", "--yes", "--client", "cursor,vscode", "--client", "gemini", "--client", "codex"],
      cli,
      "pml",
    ),
    0,
  );
  assert(
    !(await Deno.stat(join(ws.dir, ".mcp.json")).catch(() => false)),
    "claude was not asked for",
  );
  assertEquals(JSON.parse(ws.read(".cursor/mcp.json")).mcpServers.pml, {
    command: "pml",
    args: ["stdio"],
    env: { PML_WORKSPACE: "${workspaceFolder}" },
  });
  assertEquals(JSON.parse(ws.read(".vscode/mcp.json")), {
    servers: {
      pml: {
        type: "stdio",
        command: "pml",
        args: ["stdio"],
        env: { PML_WORKSPACE: "${workspaceFolder}" },
      },
    },
  });
  const gemini = JSON.parse(ws.read(".gemini/settings.json"));
  assertEquals(gemini.theme, "dark");
  assertEquals(gemini.mcpServers.x, { command: "x" });
  assertEquals(gemini.mcpServers.pml.command, "pml");
  assertEquals(gemini.mcpServers.pml.args, ["stdio"]);
  // Gemini hides secret-looking variables from MCP servers unless the entry names them.
  assertEquals(gemini.mcpServers.pml.env.TAVILY_API_KEY, "${TAVILY_API_KEY}");
  assert(!JSON.stringify(gemini).includes("workspaceFolder"));
  const toml = ws.read(".codex/config.toml");
  assertStringIncludes(toml, "# mine");
  assertStringIncludes(toml, "[mcp_servers.other]");
  assertStringIncludes(
    toml,
    '[mcp_servers.pml]\nrequired = true\ncommand = "pml"\nargs = ["stdio"]\nenv_vars = ["TAVILY_API_KEY"',
  );
  assertStringIncludes(out.join(""), "~/.codex/config.toml");
  // All clients, then again: the second run changes nothing.
  assertEquals(await runCli(["init", "--yes", "--client", "all"], io(ws).io, "pml"), 0);
  const mcp = JSON.parse(ws.read(".mcp.json"));
  assertEquals(mcp.mcpServers.pml, { type: "stdio", command: "pml", args: ["stdio"] });
  const before = treeText(ws.dir);
  const again = io(ws);
  assertEquals(await runCli(["init", "--yes", "--client", "all"], again.io, "pml"), 0);
  assertEquals(treeText(ws.dir), before);
  assert(!again.out.join("").includes("Wrote "), again.out.join(""));
});

Deno.test("init --client with http: each client's http form", async () => {
  await using ws = tempWorkspace();
  const { io: cli, out } = io(ws);
  assertEquals(
    await runCli(
      ["init", "--yes", "--transport", "http", "--port", "4556", "--client", "all"],
      cli,
    ),
    0,
  );
  const url = "http://127.0.0.1:4556/mcp";
  assertEquals(JSON.parse(ws.read(".mcp.json")).mcpServers.pml, { type: "http", url });
  assertEquals(JSON.parse(ws.read(".cursor/mcp.json")).mcpServers.pml, { url });
  assertEquals(JSON.parse(ws.read(".vscode/mcp.json")).servers.pml, { type: "http", url });
  assertEquals(JSON.parse(ws.read(".gemini/settings.json")).mcpServers.pml, {
    httpUrl: url,
    trust: true,
  });
  assertStringIncludes(ws.read(".codex/config.toml"), `url = "${url}"`);
  assertStringIncludes(out.join(""), "pml serve");
});

Deno.test("init --api-key allows the server's pure tools and leaves HTTP API MCPs asked", async () => {
  await using ws = tempWorkspace();
  assertEquals(await runCli(["init", "--yes", "--api-key", "k-123"], io(ws).io), 0);
  const allow = JSON.parse(ws.read(".pml.json")).permissions.allow;
  for (const p of ["json", "math", "text", "pml:search"]) assert(allow.includes(p), p);
  assert(!allow.some((p: string) => p.startsWith("tavily")));
  await using local = tempWorkspace();
  assertEquals(await runCli(["init", "--yes"], io(local).io), 0);
  assert(!JSON.parse(local.read(".pml.json")).permissions.allow.includes("json"));
});

Deno.test("init --api-key with an existing .pml.json: kept as it is, says which server tools it asks for", async () => {
  const hint = "ask before every use of the server tools";
  const cases: [unknown, string | undefined][] = [
    [{ permissions: { allow: ["filesystem"] } }, "json, math, text, pml:search"],
    [{}, "json, math, text, pml:search"], // no permissions: the built-in defaults
    [{ permissions: { allow: ["math", "pml"], ask: ["text:*"] } }, "json, text"],
    [{ permissions: { allow: ["*"] } }, undefined],
    [{ permissions: { allow: ["math", "text", "pml:search"], deny: ["json"] } }, undefined],
    [{ permissions: { allow: "everything" } }, undefined], // invalid: loading it says so
  ];
  for (const [file, asked] of cases) {
    await using ws = tempWorkspace(file);
    const before = ws.read(".pml.json");
    const run = io(ws);
    assertEquals(await runCli(["init", "--yes", "--api-key", "k-1"], run.io), 0);
    assertEquals(ws.read(".pml.json"), before, "an existing .pml.json is never rewritten");
    const out = run.out.join("");
    if (asked) assertStringIncludes(out, `${hint} ${asked};`, JSON.stringify(file));
    else assert(!out.includes(hint), `${JSON.stringify(file)}: ${out}`);
  }
  // Without a key there are no server tools to talk about.
  await using local = tempWorkspace({ permissions: { allow: [] } });
  const run = io(local);
  assertEquals(await runCli(["init", "--yes"], run.io), 0);
  assert(!run.out.join("").includes(hint));
});

Deno.test("init: keeps other servers, backs up, and is idempotent", async () => {
  await using ws = tempWorkspace();
  const original = { mcpServers: { other: { command: "other-mcp" } }, extra: true };
  ws.write(".mcp.json", JSON.stringify(original));
  assertEquals(await runCli(["init", "--yes"], io(ws).io), 0);
  const mcp = JSON.parse(ws.read(".mcp.json"));
  assertEquals(mcp.mcpServers.other, { command: "other-mcp" });
  assertEquals(mcp.extra, true);
  assertEquals(JSON.parse(ws.read(".mcp.json.backup")), original);

  const before = [ws.read(".pml.json"), ws.read(".mcp.json"), ws.read(".mcp.json.backup")];
  const second = io(ws);
  assertEquals(await runCli(["init", "--yes"], second.io), 0);
  assertEquals([ws.read(".pml.json"), ws.read(".mcp.json"), ws.read(".mcp.json.backup")], before);
  assertStringIncludes(second.out.join(""), "already configured");
});

Deno.test("init --api-key: the key is stored outside the project, never in clear in its files", async () => {
  await using ws = tempWorkspace();
  const key = "pml_live_0123456789abcdef";
  assertEquals(
    await runCli(
      ["init", "--yes", "--api-key", key, "--cloud-url", "http://127.0.0.1:9"],
      io(ws).io,
    ),
    0,
  );
  assert(!treeText(ws.dir).includes(key), "the key is in a project file");
  const cred = join(ws.home, ".pml", "credentials.json");
  assertEquals(JSON.parse(Deno.readTextFileSync(cred)).apiKey, key);
  assertEquals(Deno.statSync(cred).mode! & 0o777, 0o600);
  assertEquals(JSON.parse(ws.read(".pml.json")).cloudUrl, "http://127.0.0.1:9");
});

Deno.test("init on a terminal: asks for the key (skippable) and before changing .mcp.json", async () => {
  await using ws = tempWorkspace();
  ws.write(".mcp.json", JSON.stringify({ mcpServers: { other: {} } }));
  const refused = io(ws, { answers: ["", "n"] });
  assertEquals(await runCli(["init"], refused.io), 0);
  assertEquals(JSON.parse(ws.read(".mcp.json")), { mcpServers: { other: {} } });
  assertStringIncludes(refused.out.join(""), "local-only");

  const accepted = io(ws, { answers: ["", "y"] });
  assertEquals(await runCli(["init"], accepted.io), 0);
  assert(JSON.parse(ws.read(".mcp.json")).mcpServers.pml);
});

Deno.test("init --transport http writes the http form", async () => {
  await using ws = tempWorkspace();
  assertEquals(
    await runCli(["init", "--yes", "--transport", "http", "--port", "4555"], io(ws).io),
    0,
  );
  assertEquals(JSON.parse(ws.read(".mcp.json")).mcpServers.pml, {
    type: "http",
    url: "http://127.0.0.1:4555/mcp",
  });
  assertEquals(JSON.parse(ws.read(".pml.json")).port, 4555);
});

Deno.test("init: bad flags and a broken .mcp.json are clear errors that change nothing", async () => {
  await using ws = tempWorkspace();
  const bad = io(ws);
  assertEquals(await runCli(["init", "--transport", "carrier-pigeon"], bad.io), 2);
  assertStringIncludes(bad.err.join(""), "--transport");
  assertEquals(await runCli(["init", "--port", "99999"], io(ws).io), 2);
  assertEquals(await runCli(["init", "--cloud-url", "nope"], io(ws).io), 2);
  const client = io(ws);
  assertEquals(await runCli(["init", "--client", "emacs"], client.io), 2);
  assertStringIncludes(
    client.err.join(""),
    "--client must be one of claude, cursor, vscode, gemini, codex",
  );
  ws.write(".mcp.json", "{ broken");
  const broken = io(ws);
  assertEquals(await runCli(["init", "--yes"], broken.io), 1);
  assertStringIncludes(broken.err.join(""), ".mcp.json");
  assertEquals(ws.read(".mcp.json"), "{ broken");
});

Deno.test("init --workspace=DIR and --workspace DIR set up that folder, wherever pml runs", async () => {
  for (const form of [(d: string) => [`--workspace=${d}`], (d: string) => ["--workspace", d]]) {
    await using ws = tempWorkspace();
    await using elsewhere = tempWorkspace();
    // Run from another project, with PML_WORKSPACE naming it: the flag wins.
    const { io: cli, err } = io(elsewhere);
    assertEquals(await runCli(["init", "--yes", ...form(ws.dir)], cli, "pml"), 0, err.join(""));
    assertEquals(JSON.parse(ws.read(".pml.json")).workspace, ".");
    assertEquals(JSON.parse(ws.read(".mcp.json")).mcpServers.pml.args, ["stdio"]);
    assertEquals([...Deno.readDirSync(elsewhere.dir)].map((e) => e.name), [".git"]);
  }
});

Deno.test("init --workspace: a missing folder or an empty value is a clear error that writes nothing", async () => {
  await using ws = tempWorkspace();
  const missing = io(ws);
  const nowhere = join(ws.root, "nowhere");
  assertEquals(await runCli(["init", "--yes", `--workspace=${nowhere}`], missing.io), 2);
  assertStringIncludes(missing.err.join(""), `--workspace "${nowhere}" does not exist`);
  const empty = io(ws);
  assertEquals(await runCli(["init", "--yes", "--workspace="], empty.io), 2);
  assertStringIncludes(empty.err.join(""), "--workspace must name a folder");
  assertEquals([...Deno.readDirSync(ws.dir)].map((e) => e.name), [".git"]);
});

Deno.test("init --cloud-url: plain http off loopback is refused, loopback http is written", async () => {
  await using ws = tempWorkspace();
  const bad = io(ws);
  assertEquals(await runCli(["init", "--yes", "--cloud-url", "http://pml.example.com"], bad.io), 1);
  assertStringIncludes(bad.err.join(""), "HTTPS is required");
  assertEquals([...Deno.readDirSync(ws.dir)].map((e) => e.name), [".git"]);
  const local = io(ws);
  assertEquals(
    await runCli(["init", "--yes", "--cloud-url", "http://127.0.0.1:3003"], local.io),
    0,
  );
  assertEquals(JSON.parse(ws.read(".pml.json")).cloudUrl, "http://127.0.0.1:3003");
});

Deno.test("status: shows workspace, config and permissions", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["json"], deny: ["shell"] } });
  const s = io(ws);
  assertEquals(await runCli(["status", "--json"], s.io), 0);
  const status = JSON.parse(s.out.join(""));
  assertEquals(status.workspace, ws.dir);
  assertEquals(status.examples["shell:exec"], "deny");
  assertStringIncludes(status.cloudMode, "local-only");
});

Deno.test("cli: unknown command exits 2 with help", async () => {
  await using ws = tempWorkspace();
  const s = io(ws);
  assertEquals(await runCli(["frobnicate"], s.io), 2);
  assertStringIncludes(s.err.join(""), "unknown command");
});
