/**
 * `bin/pml init` spawned as a user runs it (a private HOME, no PML_WORKSPACE), for what a teammate
 * and git see afterwards: `.pml/` is ignored (`git add -A` stages none of it), the client files
 * name `pml` when the PATH finds it (the absolute path of this checkout only when it does not,
 * said on the terminal), and each client gets what it needs before its model sees PML's tools
 * (Gemini's `"trust": true`, Qwen Code's `qwen mcp approve pml`).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { PML_BIN } from "./_spawn.ts";

/** PATH without the folders that hold a `pml` (this machine's own installs). */
function pathWithoutPml(): string {
  return (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":")
    .filter((d) => d && !existsSync(join(d, "pml"))).join(":");
}

async function run(
  command: string,
  args: string[],
  ws: { dir: string; home: string },
  path = pathWithoutPml(),
) {
  const out = await new Deno.Command(command, {
    args,
    cwd: ws.dir,
    env: {
      PATH: path,
      HOME: ws.home,
      DENO_NO_UPDATE_CHECK: "1",
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@example.test",
    },
    clearEnv: true,
    stdin: "null",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test("e2e init: .pml/ goes into .gitignore, so `git add -A` stages neither the audit log nor the approvals", async () => {
  await using ws = tempWorkspace();
  Deno.removeSync(join(ws.dir, ".git"), { recursive: true });
  assertEquals((await run("git", ["init", "-q"], ws)).code, 0);
  ws.write(".gitignore", "node_modules/"); // the user's own, no final newline
  const init = await run(PML_BIN, ["init", "--yes"], ws);
  assertEquals(init.code, 0, init.out);
  assertStringIncludes(init.out, "Added .pml/ to");
  assertEquals(ws.read(".gitignore").split("\n").filter((l) => l && !l.startsWith("#")), [
    "node_modules/",
    ".pml/",
  ]);
  // What pml keeps there while it runs, as an agent session leaves it.
  ws.write(".pml/audit.log", '{"event":"denied"}\n');
  ws.write(".pml/approvals/ab12.json", '{"forHuman":{"description":"the file says SECRET"}}');
  ws.write("src/app.ts", "export {};\n");
  assertEquals((await run("git", ["add", "-A"], ws)).code, 0);
  const staged = (await run("git", ["diff", "--cached", "--name-only"], ws)).out.trim().split("\n");
  assert(!staged.some((f) => f.startsWith(".pml/")), staged.join(", "));
  assert(staged.includes("src/app.ts") && staged.includes(".gitignore"), staged.join(", "));
  assert(staged.includes(".mcp.json") && staged.includes(".pml.json"), staged.join(", "));
  // Again: nothing added twice.
  const before = ws.read(".gitignore");
  const again = await run(PML_BIN, ["init", "--yes"], ws);
  assertEquals(again.code, 0, again.out);
  assertEquals(ws.read(".gitignore"), before);
  assert(!again.out.includes("Added .pml/"), again.out);
});

Deno.test("e2e init: the client files name `pml` when the PATH finds it, the checkout's path only when not (and say so)", async () => {
  await using ws = tempWorkspace();
  const bin = join(ws.root, "bin");
  Deno.mkdirSync(bin);
  Deno.symlinkSync(PML_BIN, join(bin, "pml"));
  const clients = ["--client", "claude,codex,opencode,gemini"];
  const onPath = await run(
    PML_BIN,
    ["init", "--yes", ...clients],
    ws,
    `${bin}:${pathWithoutPml()}`,
  );
  assertEquals(onPath.code, 0, onPath.out);
  assertEquals(JSON.parse(ws.read(".mcp.json")).mcpServers.pml.command, "pml");
  assertEquals(JSON.parse(ws.read(".gemini/settings.json")).mcpServers.pml.command, "pml");
  assertEquals(JSON.parse(ws.read("opencode.json")).mcp.pml.command, ["pml", "stdio"]);
  assertStringIncludes(ws.read(".codex/config.toml"), 'command = "pml"');
  for (const f of [".mcp.json", ".gemini/settings.json", "opencode.json", ".codex/config.toml"]) {
    assert(!ws.read(f).includes(ws.root), `${f} names no path of this machine`);
  }
  assert(!onPath.out.includes("not on your PATH"), onPath.out);

  await using other = tempWorkspace();
  const off = await run(PML_BIN, ["init", "--yes"], other);
  assertEquals(off.code, 0, off.out);
  const command = JSON.parse(other.read(".mcp.json")).mcpServers.pml.command;
  assert(command.startsWith("/") && command.endsWith("/bin/pml"), command);
  assertStringIncludes(off.out, "`pml` is not on your PATH");
  assertStringIncludes(off.out, command);
});

Deno.test("e2e init --client gemini,qwen: Gemini's entry says trust: true; Qwen's approval step is said, here and in docs/clients.md", async () => {
  await using ws = tempWorkspace();
  const init = await run(PML_BIN, ["init", "--yes", "--client", "gemini,qwen"], ws);
  assertEquals(init.code, 0, init.out);
  assertEquals(JSON.parse(ws.read(".gemini/settings.json")).mcpServers.pml.trust, true);
  assertEquals(JSON.parse(ws.read(".qwen/settings.json")).mcpServers.pml.trust, true);
  assertStringIncludes(init.out, "qwen mcp approve pml");
  await using http = tempWorkspace();
  const served = await run(
    PML_BIN,
    ["init", "--yes", "--client", "gemini", "--transport", "http", "--port", "4012"],
    http,
  );
  assertEquals(served.code, 0, served.out);
  assertEquals(JSON.parse(http.read(".gemini/settings.json")).mcpServers.pml, {
    httpUrl: "http://127.0.0.1:4012/mcp",
    trust: true,
  });
  const docs = Deno.readTextFileSync(
    join(import.meta.dirname!, "..", "..", "docs", "clients.md"),
  );
  assert(docs.includes("qwen mcp approve pml"), "docs/clients.md names Qwen Code's approval step");
});
