/**
 * Workflows beside the sandbox's walls (DESIGN §13 "Sandbox model"): what a developer runs in
 * `shell:exec` must work. A temporary HOME holds fake toolchains where the real ones install
 * themselves (`~/.cargo/bin`, `~/.local/bin`, `~/.nvm/...`, `~/.bun/bin`, pyenv shims), a
 * `~/.gitconfig` with an identity, and secrets beside them; PATH lists the toolchains as a shell
 * profile would. Through the real gateway (SDK client in memory).
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";

type Out = { code: number; stdout: string; stderr: string };

function parse(result: unknown): Out {
  const text = textOf(result);
  return JSON.parse(text.slice(text.indexOf("{"))) as Out;
}

const TOOLCHAINS = [
  ".cargo/bin/cargo",
  ".local/bin/uv",
  ".nvm/versions/node/v22.0.0/bin/node",
  ".bun/bin/bun",
  ".pyenv/shims/python",
];

/** A HOME with fake toolchains (each prints its name and `ok`) and PATH listing them first. */
function toolchainHome(home: string): string {
  const dirs: string[] = [];
  for (const rel of TOOLCHAINS) {
    const path = join(home, rel);
    Deno.mkdirSync(join(path, ".."), { recursive: true });
    Deno.writeTextFileSync(path, `#!/bin/sh\necho "${rel.split("/").pop()} ok $*"\n`);
    Deno.chmodSync(path, 0o755);
    dirs.push(join(path, ".."));
  }
  return [...dirs, Deno.env.get("PATH") ?? "/usr/bin:/bin"].join(":");
}

Deno.test("workflow toolbox: toolchains under HOME on PATH run in shell:exec", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell"] } });
  const PATH = toolchainHome(ws.home);
  await using gw = await gatewayFor(ws, { env: { PATH } });
  for (const rel of TOOLCHAINS) {
    const name = rel.split("/").pop()!;
    const out = parse(
      await gw.client.callTool({ name: "shell:exec", arguments: { command: `${name} --version` } }),
    );
    assertEquals(out.stdout, `${name} ok --version\n`, `${name}: ${out.stderr}`);
  }
});

Deno.test("workflow git: git init, add and commit in the workspace take the identity of ~/.gitconfig", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell"] } });
  Deno.removeSync(join(ws.dir, ".git"), { recursive: true });
  Deno.writeTextFileSync(
    join(ws.home, ".gitconfig"),
    "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n[init]\n\tdefaultBranch = main\n",
  );
  ws.write("a.txt", "one\n");
  await using gw = await gatewayFor(ws);
  const run = async (command: string) =>
    parse(await gw.client.callTool({ name: "shell:exec", arguments: { command } }));
  const init = await run("git init -q && git add a.txt && git commit -q -m first && git log");
  assertEquals(init.code, 0, init.stderr);
  assertStringIncludes(init.stdout, "Author: Ada Lovelace <ada@example.com>");
  // The new repository keeps the config git wrote (checked), so the next commits work too.
  ws.write("b.txt", "two\n");
  const next = await run("git add b.txt && git commit -q -m second && git log --oneline");
  assertEquals(next.code, 0, next.stderr);
  assertEquals(next.stdout.trim().split("\n").length, 2);
  assertStringIncludes(ws.read(".git/config"), "repositoryformatversion");
});

/** A unix socket server standing in for an SSH agent: answers `agent` to each connection. */
function fakeAgent(path: string): Deno.Listener {
  const listener = Deno.listen({ transport: "unix", path });
  (async () => {
    for await (const conn of listener) {
      await conn.write(new TextEncoder().encode("agent\n")).catch(() => {});
      conn.close();
    }
  })();
  return listener;
}

/** Connects to `$SSH_AUTH_SOCK` from inside the shell (python3's socket module, as ssh would). */
const CONNECT_AGENT = `python3 -c '
import os, socket
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["SSH_AUTH_SOCK"])
print(s.recv(16).decode().strip())'`;

Deno.test("workflow ssh agent: SSH_AUTH_SOCK reaches the shell only when .pml.json grants it", async () => {
  for (const granted of [false, true]) {
    await using ws = tempWorkspace({
      permissions: { allow: ["shell"] },
      ...(granted ? { sandbox: { sshAgent: true } } : {}),
    });
    const sock = join(ws.root, "agent.sock");
    const agent = fakeAgent(sock);
    try {
      await using gw = await gatewayFor(ws, { env: { SSH_AUTH_SOCK: sock } });
      const out = parse(
        await gw.client.callTool({ name: "shell:exec", arguments: { command: CONNECT_AGENT } }),
      );
      if (granted) assertEquals(out.stdout, "agent\n", out.stderr);
      else assert(out.code !== 0 && !out.stdout.includes("agent"), JSON.stringify(out));
    } finally {
      agent.close();
    }
  }
});
