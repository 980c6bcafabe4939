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
import { detectOsSandbox } from "../../packages/pml/src/sandbox/detect_os_sandbox.ts";

type Out = { code: number; stdout: string; stderr: string; hint?: string };

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

/**
 * A workspace with the shell allowed, no repository yet, a file `a.txt` and an identity in
 * `~/.gitconfig`; `run` runs a command through the gateway.
 */
async function gitWorkspace() {
  const ws = tempWorkspace({ permissions: { allow: ["shell"] } });
  Deno.removeSync(join(ws.dir, ".git"), { recursive: true });
  Deno.writeTextFileSync(
    join(ws.home, ".gitconfig"),
    "[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n[init]\n\tdefaultBranch = main\n",
  );
  ws.write("a.txt", "one\n");
  const gw = await gatewayFor(ws);
  const run = async (command: string) =>
    parse(await gw.client.callTool({ name: "shell:exec", arguments: { command } }));
  return {
    ws,
    run,
    async [Symbol.asyncDispose]() {
      await gw[Symbol.asyncDispose]();
      await ws[Symbol.asyncDispose]();
    },
  };
}

Deno.test("workflow git: git init, add and commit in the workspace take the identity of ~/.gitconfig", async () => {
  await using git = await gitWorkspace();
  const { ws, run } = git;
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

Deno.test("workflow git (nested, worktree, clone): ordinary repositories a command makes keep working beside the host-run walls", async () => {
  await using git = await gitWorkspace();
  const { run } = git;
  const steps = [
    "git init -q && git add a.txt && git commit -q -m first",
    // A linked worktree inside the workspace, and a commit from it.
    "git worktree add -q wt -b feature && cd wt && echo two > b.txt && git add b.txt && git commit -q -m second",
    // A nested repository, and a clone of the root into the workspace.
    "git init -q sub && cd sub && echo x > x && git add x && git commit -q -m sub",
    "git clone -q . copy && git -C copy log --oneline | wc -l",
  ];
  for (const step of steps) {
    const out = await run(step);
    assertEquals(out.code, 0, `${step}: ${out.stderr}`);
  }
  // The next calls find them as git left them.
  const after = await run(
    "git -C wt log --oneline | wc -l; git -C sub log --oneline | wc -l; git -C copy status --short | wc -l; git worktree list | wc -l",
  );
  assertEquals(after.code, 0, after.stderr);
  assertEquals(after.stdout.split("\n").map((l) => l.trim()).filter(Boolean), ["2", "1", "0", "2"]);
});

Deno.test("workflow git worktree remove: an existing linked worktree's git files stay read-only, so git cannot remove it from the sandbox; the result says a human does, and how", async () => {
  await using git = await gitWorkspace();
  const { ws, run } = git;
  const made = await run(
    "git init -q && git add a.txt && git commit -q -m first && git worktree add -q wt -b feature",
  );
  assertEquals(made.code, 0, made.stderr);
  // The next call: the worktree exists, its `.git` file and `.git/worktrees/wt` are bound
  // (behind Landlock, which cannot bind, they are put back after the command instead).
  const removed = await run("git worktree remove wt");
  // What git reads to find the worktree's repository is as it was.
  assertEquals(
    Deno.readTextFileSync(join(ws.dir, ".git", "worktrees", "wt", "commondir")),
    "../..\n",
  );
  assertStringIncludes(Deno.readTextFileSync(join(ws.dir, "wt", ".git")), ".git/worktrees/wt");
  if (!("bwrap" in detectOsSandbox(Deno.env.get("PATH")))) return;
  assert(removed.code !== 0, JSON.stringify(removed));
  assertStringIncludes(removed.stderr, "Device or resource busy");
  assertStringIncludes(removed.hint ?? "", `"${join(ws.dir, "wt")}" holds files the sandbox keeps`);
  assertStringIncludes(removed.hint ?? "", "git worktree remove --force");
  // The human's command the hint names, outside the sandbox, removes it.
  const human = await new Deno.Command("git", {
    args: ["worktree", "remove", "--force", "wt"],
    cwd: ws.dir,
    stdout: "null",
    stderr: "piped",
  }).output();
  assertEquals(human.code, 0, new TextDecoder().decode(human.stderr));
  assertEquals((await run("git worktree list | wc -l")).stdout.trim(), "1");
});

Deno.test("workflow npm: package.json edits that are not hooks stay, and npm runs the scripts one names", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell", "filesystem"] } });
  ws.write(
    "package.json",
    JSON.stringify({ name: "app", version: "1.0.0", scripts: { test: "echo tested" } }, null, 2) +
      "\n",
  );
  await using gw = await gatewayFor(ws, { env: { PATH: Deno.env.get("PATH") ?? "" } });
  const run = async (command: string) =>
    parse(await gw.client.callTool({ name: "shell:exec", arguments: { command } }));
  const set = await run(
    "npm pkg set scripts.build='echo built' scripts.preview='echo preview' dependencies.left-pad=1.3.0",
  );
  assertEquals(set.code, 0, set.stderr);
  const edit = await gw.client.callTool({
    name: "filesystem:edit_file",
    arguments: {
      path: "package.json",
      edits: [{ oldText: '"test": "echo tested"', newText: '"test": "echo tested twice"' }],
    },
  });
  assert(!edit.isError, textOf(edit));
  assert(!textOf(edit).includes("put back"), textOf(edit));
  const pkg = JSON.parse(ws.read("package.json"));
  assertEquals(pkg.scripts, {
    test: "echo tested twice",
    build: "echo built",
    preview: "echo preview",
  });
  assertEquals(pkg.dependencies, { "left-pad": "1.3.0" });
  const test = await run("npm test --silent && npm run build --silent");
  assertEquals(test.code, 0, test.stderr);
  assertEquals(test.stdout, "tested twice\nbuilt\n");
});

Deno.test("workflow cargo: a crate builds and runs in shell:exec", async () => {
  const home = Deno.env.get("HOME") ?? "";
  const cargo = join(home, ".cargo", "bin");
  let available = false;
  try {
    available = Deno.statSync(join(cargo, "cargo")).isFile;
  } catch { /* no cargo here */ }
  if (!available) {
    console.error("workflow cargo: skipped, no cargo in ~/.cargo/bin");
    return;
  }
  await using ws = tempWorkspace({ permissions: { allow: ["shell"] } });
  // The user's own HOME: where rustup keeps its toolchains.
  await using gw = await gatewayFor(ws, {
    env: { HOME: home, PATH: `${cargo}:${Deno.env.get("PATH") ?? ""}` },
  });
  const out = parse(
    await gw.client.callTool({
      name: "shell:exec",
      arguments: {
        command: "cargo new -q --vcs none demo && cd demo && cargo run -q --offline",
        timeout_ms: 300_000,
      },
    }),
  );
  assertEquals(out.code, 0, out.stderr);
  assertEquals(out.stdout, "Hello, world!\n");
});
