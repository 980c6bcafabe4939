/**
 * `pml init --client opencode` and `--client qwen` (their own files in their own syntax, the trust
 * setting each needs said), and `pml <command> --help`.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import type { CliIo } from "./io.ts";
import { runCli } from "./run.ts";

function cliIo(ws: { dir: string; home: string }) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    env: { PML_WORKSPACE: ws.dir },
    cwd: ws.dir,
    home: ws.home,
    stdout: (t) => out.push(t),
    stderr: (t) => err.push(t),
    isTerminal: false,
  };
  return { io, out, err };
}

Deno.test("init --client opencode: opencode.json's mcp entry (local, command as one array), other settings kept", async () => {
  await using ws = tempWorkspace();
  ws.write(
    "opencode.json",
    JSON.stringify({ model: "m", mcp: { other: { type: "local", command: ["o"] } } }),
  );
  const { io, out } = cliIo(ws);
  assertEquals(await runCli(["init", "--yes", "--client", "opencode"], io, "pml"), 0);
  const config = JSON.parse(ws.read("opencode.json"));
  assertEquals(config.model, "m");
  assertEquals(config.mcp.other, { type: "local", command: ["o"] });
  assertEquals(config.mcp.pml, { type: "local", command: ["pml", "stdio"], enabled: true });
  assertEquals(JSON.parse(ws.read("opencode.json.backup")).mcp.pml, undefined);
  assertStringIncludes(out.join(""), '"pml_*": "allow"');
  assert(!(await Deno.stat(join(ws.dir, ".mcp.json")).catch(() => false)), "claude not asked");
  // Idempotent.
  const again = cliIo(ws);
  assertEquals(await runCli(["init", "--yes", "--client", "opencode"], again.io, "pml"), 0);
  assertStringIncludes(again.out.join(""), "PML is already configured");
});

Deno.test("init --client qwen: .qwen/settings.json with trust stated; http forms of both", async () => {
  await using ws = tempWorkspace();
  const { io, out } = cliIo(ws);
  assertEquals(await runCli(["init", "--yes", "--client", "qwen,opencode"], io, "pml"), 0);
  assertEquals(JSON.parse(ws.read(".qwen/settings.json")), {
    mcpServers: { pml: { command: "pml", args: ["stdio"], trust: true } },
  });
  assertStringIncludes(out.join(""), 'The entry says "trust": true, so Qwen does not ask');

  await using http = tempWorkspace();
  const h = cliIo(http);
  assertEquals(
    await runCli(
      ["init", "--yes", "--client", "qwen,opencode", "--transport", "http", "--port", "4011"],
      h.io,
      "pml",
    ),
    0,
  );
  assertEquals(JSON.parse(http.read(".qwen/settings.json")).mcpServers.pml, {
    httpUrl: "http://127.0.0.1:4011/mcp",
    trust: true,
  });
  assertEquals(JSON.parse(http.read("opencode.json")).mcp.pml, {
    type: "remote",
    url: "http://127.0.0.1:4011/mcp",
    enabled: true,
  });
});

Deno.test("init --client all includes opencode and qwen", async () => {
  await using ws = tempWorkspace();
  const { io } = cliIo(ws);
  assertEquals(await runCli(["init", "--yes", "--client", "all"], io, "pml"), 0);
  for (const file of ["opencode.json", ".qwen/settings.json", ".mcp.json", ".codex/config.toml"]) {
    assert(ws.read(file).includes("stdio"), file);
  }
});

Deno.test("pml <command> --help prints that command's usage and changes nothing", async () => {
  await using ws = tempWorkspace();
  for (const command of ["init", "stdio", "serve", "status", "approvals", "approve", "deny"]) {
    for (const flag of ["--help", "-h"]) {
      const { io, out, err } = cliIo(ws);
      assertEquals(await runCli([command, flag], io, "pml"), 0, `${command} ${flag}`);
      assertEquals(err.join(""), "", `${command} ${flag}`);
      const text = out.join("");
      assertStringIncludes(text, "Usage:");
      assertStringIncludes(text, `pml ${command}`);
      assert(!text.includes("Unknown option"), text);
    }
  }
  const { io, out } = cliIo(ws);
  assertEquals(await runCli(["init", "--yes", "--help"], io, "pml"), 0);
  assertStringIncludes(out.join(""), "--client NAME");
  assertStringIncludes(out.join(""), "opencode, qwen");
  assert(!(await Deno.stat(join(ws.dir, ".mcp.json")).catch(() => false)), "nothing written");
});
