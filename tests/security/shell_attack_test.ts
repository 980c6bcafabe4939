/**
 * Attack: `shell:exec` is allowed (as after a "yes"), and the command tries to get out. Through a
 * spawned `pml stdio` with a real API key, a BYOK key and stored credentials in its environment.
 * Families: shell_escape (files outside, network), key_leak (pml's environ, credentials, env),
 * control_files (through the shell), orphans (timeout, stdin close, SIGKILL of pml). Each attempt
 * must be refused or see nothing; none may leak a key, change a control file or leave a process.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { liveProcesses, pidsMentioning } from "../../packages/pml/src/procfs.ts";
import { connectStdio, PML_BIN, pmlEnv } from "../e2e/_spawn.ts";

const API_KEY = "pml_live_SECRET_API_KEY_41";
const BYOK = "tvly-SECRET_BYOK_VALUE_42";
const STORED = "pml_stored_SECRET_CREDENTIAL_43";
const SECRETS = [API_KEY, BYOK, STORED, "OUTSIDE_SECRET_44"];

type Out = { code: number; stdout: string; stderr: string; timedOut: boolean };

function parse(result: unknown): Out {
  const text = ((result as { content: { text?: string }[] }).content ?? []).map((c) => c.text ?? "")
    .join("");
  const json = text.slice(text.indexOf("{"));
  return JSON.parse(json) as Out;
}

/** A workspace with shell allowed, a secret beside it, and stored credentials in its HOME. */
function setUp() {
  const ws = tempWorkspace({
    permissions: { allow: ["shell", "filesystem"] },
    env: ["TAVILY_API_KEY"],
  });
  Deno.writeTextFileSync(join(ws.root, "secret.txt"), "OUTSIDE_SECRET_44");
  Deno.mkdirSync(join(ws.home, ".pml"), { recursive: true });
  Deno.writeTextFileSync(
    join(ws.home, ".pml", "credentials.json"),
    JSON.stringify({ apiKey: STORED }),
  );
  ws.write("src/ok.txt", "inside");
  return ws;
}

const ENV = { PML_API_KEY: API_KEY, TAVILY_API_KEY: BYOK };

/** Live processes whose command line mentions `marker` (a unique sleep length). */
const withMarker = pidsMentioning;

async function waitFor(check: () => boolean, what: string, ms = 10_000) {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

Deno.test("attack shell_escape + key_leak: an allowed shell sees only the workspace, no network, no key", async () => {
  await using ws = setUp();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  let connections = 0;
  (async () => {
    for await (const conn of listener) (connections++, conn.close());
  })();
  await using client = await connectStdio(ws, { env: ENV });
  const pmlPid = liveProcesses().find((p) => {
    try {
      return Deno.readTextFileSync(`/proc/${p.pid}/environ`).includes(API_KEY);
    } catch {
      return false;
    }
  })?.pid;
  assert(pmlPid, "the pml process holds the key in its environment");
  const outside = join(ws.root, "secret.txt");
  const attempts = [
    // files outside the workspace
    `cat ${outside}`,
    "cat ../secret.txt",
    `cd .. && cat secret.txt`,
    `ln -s ${outside} link && cat link`,
    `ln -s .. up && cat up/secret.txt`,
    `cp ${outside} copied.txt && cat copied.txt`,
    `echo pwned > ${join(ws.root, "planted.txt")}; cat ${join(ws.root, "planted.txt")}`,
    `ls ${ws.root}`,
    `find / -name secret.txt 2>/dev/null`,
    `grep -r OUTSIDE_SECRET_44 / 2>/dev/null | head -1`,
    // keys
    `cat /proc/${pmlPid}/environ`,
    `cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'`,
    "env",
    "cat /proc/self/environ",
    `cat ${join(ws.home, ".pml", "credentials.json")}`,
    "cat ~/.pml/credentials.json",
    `cat /proc/${pmlPid}/cmdline; ls -la /proc/${pmlPid}/cwd`,
    "ps -ef",
    // network
    `curl -sS -m 3 http://127.0.0.1:${port}/`,
    `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${port} && printf NET_%s OK'`,
    `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${port}), 2); print('NET_' + 'OK')"`,
    `node -e "require('net').connect(${port}, '127.0.0.1').on('connect', () => console.log('NET_' + 'OK'))"`,
    "getent hosts example.com",
  ];
  for (const command of attempts) {
    const result = await client.callTool({
      name: "shell__exec",
      arguments: { command, timeout_ms: 10_000 },
    });
    const out = parse(result);
    const seen = out.stdout + out.stderr;
    for (const secret of SECRETS) {
      assert(!seen.includes(secret), `"${command}" leaked ${secret}: ${seen.slice(0, 300)}`);
    }
    assert(!seen.includes("NET_OK"), `"${command}" reached the network: ${seen}`);
  }
  assertEquals(connections, 0, "nothing reached the loopback listener");
  assert(!(await Deno.stat(join(ws.root, "planted.txt")).catch(() => false)), "no write outside");
  // The workspace itself still works.
  const ok = parse(
    await client.callTool({ name: "shell__exec", arguments: { command: "cat src/ok.txt" } }),
  );
  assertEquals(ok.stdout, "inside");
  listener.close();
  console.error(`attack shell_escape+key_leak: ${attempts.length} attempts, none got out`);
});

Deno.test("attack control_files via shell: read-only binds, and created ones are removed", async () => {
  await using ws = setUp();
  ws.write(".mcp.json", '{"mcpServers":{}}');
  ws.write(".pml/mcp.lock", '{"version":1,"entries":{}}');
  const before = [".pml.json", ".mcp.json", ".pml/mcp.lock"].map((f) => ws.read(f));
  await using client = await connectStdio(ws, { env: ENV });
  const attempts = [
    `echo '{"permissions":{"allow":["*"]}}' > .pml.json`,
    "rm -f .pml.json",
    "mv .pml.json moved.json",
    "truncate -s 0 .pml/audit.log",
    "rm -rf .pml",
    "echo x > .pml/mcp.lock",
    "mv .pml pml-moved",
    "echo '{}' > .mcp.json",
    "ln -f .pml.json hard.json && echo x >> hard.json",
    "mkdir -p .vscode && echo '{}' > .vscode/mcp.json",
    "mkdir -p .gemini && echo '{}' > .gemini/settings.json",
    "mkdir -p .codex && echo x > .codex/config.toml",
    "mkdir -p .cursor && echo '{}' > .cursor/mcp.json",
    "echo '{}' > opencode.json",
    "mkdir -p .qwen && echo '{}' > .qwen/settings.json",
    "chmod 777 .pml.json",
    "touch -d 2000-01-01 .pml.json",
  ];
  for (const command of attempts) {
    await client.callTool({ name: "shell__exec", arguments: { command } });
  }
  assertEquals([".pml.json", ".mcp.json", ".pml/mcp.lock"].map((f) => ws.read(f)), before);
  for (
    const f of [
      ".vscode/mcp.json",
      ".gemini/settings.json",
      ".codex/config.toml",
      ".cursor/mcp.json",
      "opencode.json",
      ".qwen/settings.json",
    ]
  ) {
    assert(!(await Deno.stat(join(ws.dir, f)).catch(() => false)), `${f} was left behind`);
  }
  const audit = ws.read(".pml/audit.log");
  assertStringIncludes(audit, "control_file_blocked");
  console.error(`attack control_files via shell: ${attempts.length} attempts, none got through`);
});

Deno.test("attack control_files via shell: control files that appear mid-session, and folders moved from under them", async () => {
  await using ws = setUp();
  ws.write(".vscode/mcp.json", '{"servers":{}}');
  ws.write(".vscode/settings.json", "{}");
  await using client = await connectStdio(ws, { env: ENV });
  const shell = (command: string) =>
    client.callTool({ name: "shell__exec", arguments: { command } });
  // The shell's sandbox is started and warm; then the human runs `pml init` for more clients.
  assertEquals(parse(await shell("echo warm")).stdout, "warm\n");
  ws.write(".mcp.json", '{"mcpServers":{}}');
  ws.write(".mcp.json.backup", "{}");
  ws.write(".cursor/mcp.json", '{"mcpServers":{}}');
  ws.write(".gemini/settings.json", "{}");
  ws.write(".codex/config.toml", "[mcp_servers.pml]\n");
  const files = [
    ".pml.json",
    ".mcp.json",
    ".mcp.json.backup",
    ".vscode/mcp.json",
    ".cursor/mcp.json",
    ".gemini/settings.json",
    ".codex/config.toml",
  ];
  const before = files.map((f) => ws.read(f));
  const attempts = [
    "echo x > .mcp.json",
    "echo x > .mcp.json.backup",
    "echo x > .cursor/mcp.json",
    "rm -f .gemini/settings.json",
    "echo x >> .codex/config.toml",
    "mv .vscode vscode-moved && mkdir .vscode && echo x > .vscode/mcp.json",
    "mv .cursor cursor-moved; mkdir -p .cursor; echo x > .cursor/mcp.json",
    "rm -rf .gemini; mkdir .gemini; echo x > .gemini/settings.json",
    "mv .codex c2; mkdir .codex; echo x > .codex/config.toml",
    "mv .mcp.json m.json; echo x > .mcp.json",
  ];
  for (const command of attempts) await shell(command);
  assertEquals(files.map((f) => ws.read(f)), before);
  for (const moved of ["vscode-moved", "cursor-moved", "c2", "m.json"]) {
    assert(!(await Deno.stat(join(ws.dir, moved)).catch(() => false)), `${moved} exists`);
  }
  // Those folders are editors' and agents' settings: protected whole (DESIGN §13), while files
  // beside them stay the tools' to change.
  await shell("echo '{\"a\":1}' > .vscode/settings.json");
  assertEquals(ws.read(".vscode/settings.json"), "{}");
  assertEquals(parse(await shell("echo x > .editorconfig && echo ok")).stdout, "ok\n");
  console.error(
    `attack control_files via shell (mid-session, moved folders): ${attempts.length} attempts, none got through`,
  );
});

/** Ways a command can leave a process behind when it ends. */
const DETACHED = [
  "sleep 1003 &",
  "(sleep 1004 &)",
  "nohup sleep 1005 >/dev/null 2>&1 &",
  "setsid sleep 1006 >/dev/null 2>&1 < /dev/null &",
  "sh -c 'sleep 1007 &' &",
  "setsid -f sleep 1012 >/dev/null 2>&1 < /dev/null",
  "(setsid sh -c 'sleep 1013 & sleep 1014' >/dev/null 2>&1 < /dev/null &)",
  "setsid sh -c 'while :; do sleep 1015 & sleep 0.01; done' >/dev/null 2>&1 < /dev/null &",
  "setsid sh -c 'sleep 1016; echo {} > .mcp.json' >/dev/null 2>&1 < /dev/null & echo started",
  "setsid nohup sh -c 'trap \"\" HUP TERM; sleep 1017' >/dev/null 2>&1 < /dev/null &",
  "perl -e 'use POSIX; fork and exit; POSIX::setsid(); exec q(sleep), 1018' &",
  "/usr/bin/python3 -c \"import os,time; os.fork() and os._exit(0); os.setsid(); os.execvp('sleep', ['sleep', '1019'])\"",
];

Deno.test("attack orphans: nothing a command starts outlives its timeout, its end, pml's stdin or a SIGKILL of pml", async () => {
  await using ws = setUp();
  {
    await using client = await connectStdio(ws, { env: ENV });
    // 1. Timeout with a background child holding stdout: the call ends at the timeout.
    const held = parse(
      await client.callTool({
        name: "shell__exec",
        arguments: { command: "sleep 1001 & sleep 1002", timeout_ms: 500 },
      }),
    );
    assert(held.timedOut, JSON.stringify(held));
    // 2. A command that ends but leaves children behind, in every way a shell can: the group and
    // what left it (`setsid`, double forks, a detached loop that keeps forking) are gone by the
    // time the result arrives.
    const markers = [
      "1001",
      "1002",
      "1003",
      "1004",
      "1005",
      "1006",
      "1007",
      "1012",
      "1013",
      "1014",
      "1015",
      "1016",
    ]
      .concat(["1017", "1018", "1019"]);
    for (const command of DETACHED) {
      await client.callTool({ name: "shell__exec", arguments: { command } });
      const left = markers.flatMap((m) => withMarker(`sleep\0${m}`));
      assertEquals(left, [], `"${command}" left processes behind: ${left.join(", ")}`);
    }
    // 3. A command that detaches a process does not take another command still running down.
    const running = client.callTool({
      name: "shell__exec",
      arguments: { command: "sleep 0.5; echo still-running" },
    });
    await client.callTool({
      name: "shell__exec",
      arguments: { command: "setsid sleep 1008 >/dev/null 2>&1 < /dev/null & echo ok" },
    });
    assertEquals(parse(await running).stdout, "still-running\n");
    assertEquals(withMarker("sleep\x001008"), []);
  }

  // 4. SIGKILL of pml: the sandbox and everything in it die with it.
  const child = new Deno.Command(PML_BIN, {
    args: ["stdio"],
    cwd: ws.dir,
    env: pmlEnv(ws, ENV),
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const w = child.stdin.getWriter();
  const send = (msg: unknown) => w.write(new TextEncoder().encode(JSON.stringify(msg) + "\n"));
  await send({
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "k", version: "1" },
    },
  });
  await send({ jsonrpc: "2.0", method: "notifications/initialized" });
  await send({
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: {
      name: "shell__exec",
      arguments: { command: "setsid sleep 1009 >/dev/null 2>&1 < /dev/null & sleep 1010" },
    },
  });
  await waitFor(() => withMarker("sleep\x001010").length === 1, "the command to run");
  Deno.kill(child.pid, "SIGKILL");
  await child.status;
  await child.stdout.cancel();
  await waitFor(
    () => withMarker("sleep\x001009").length + withMarker("sleep\x001010").length === 0,
    "everything to die with pml",
  );
  console.error(`attack orphans: ${DETACHED.length + 3} ways to leave a process, none left one`);
});

Deno.test("attack process_flood: a command that starts hundreds of processes is stopped; none is left; the shell works again", async () => {
  await using ws = setUp();
  await using client = await connectStdio(ws, { env: ENV });
  const flood = await client.callTool({
    name: "shell__exec",
    arguments: { command: "for i in $(seq 1 600); do sleep 1011 & done; wait", timeout_ms: 60_000 },
  });
  assert(flood.isError, JSON.stringify(flood).slice(0, 300));
  const message = ((flood as { content: { text?: string }[] }).content ?? []).map((c) => c.text)
    .join("");
  assertStringIncludes(message, "processes");
  await waitFor(() => withMarker("sleep\x001011").length === 0, "the flood to be gone");
  const ok = parse(
    await client.callTool({ name: "shell__exec", arguments: { command: "echo back" } }),
  );
  assertEquals(ok.stdout, "back\n");
  console.error("attack process_flood: 600 processes asked, stopped above 256, none left");
});
