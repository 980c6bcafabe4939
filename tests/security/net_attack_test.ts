/**
 * Attack: `.pml.json` `sandbox.net` grants one loopback port (`127.0.0.1:A`); the code inside the
 * sandbox tries to reach another one (`B`, the granted host on another port) every way it can:
 * through the proxy by every protocol and spelling, around it (no proxy, raw sockets from bash,
 * python, node), through the proxy's unix sockets directly, by replacing them, with a second
 * request on a granted connection and with `Host` headers. Through a spawned `pml stdio` (as
 * root here and in CI), for `shell:exec` and for an approved raw-command server. Family:
 * net_per_host. Each attempt must leave B without a single connection, while A answers (the
 * workflow: a local dev server or npm mirror the user granted).
 */
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "../e2e/_spawn.ts";

type Out = { code: number; stdout: string; stderr: string };

function parse(result: unknown): Out {
  const text = ((result as { content: { text?: string }[] }).content ?? []).map((c) => c.text ?? "")
    .join("");
  return JSON.parse(text.slice(text.indexOf("{"))) as Out;
}

/** Two loopback HTTP servers: A (granted) answers `A_ANSWER`, B counts every connection. */
function servers() {
  const a = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    return new Response("A_ANSWER\n");
  });
  const b = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const seen = { b: 0 };
  (async () => {
    for await (const conn of b) {
      seen.b++;
      const body = "B_SECRET\n";
      await conn.write(
        new TextEncoder().encode(
          `HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
        ),
      ).catch(() => {});
      conn.close();
    }
  })().catch(() => {});
  return {
    a: a.addr.port,
    b: b.addr.port,
    seen,
    async [Symbol.asyncDispose]() {
      b.close();
      await a.shutdown();
    },
  };
}

/** Every way to B (and one around the proxy to A) the shell tries; none may reach B. */
function attempts(a: number, b: number): string[] {
  const raw = (lines: string[]) => `printf '${lines.join("\\r\\n")}\\r\\n\\r\\n'`;
  return [
    `curl -sS -m 3 http://127.0.0.1:${b}/`,
    `curl -sS -m 3 -p http://127.0.0.1:${b}/`,
    `curl -sS -m 3 -x socks5h://127.0.0.1:1080 http://127.0.0.1:${b}/`,
    `curl -sS -m 3 -x socks5://127.0.0.1:1080 http://127.0.0.1:${b}/`,
    `curl -sS -m 3 --noproxy '*' http://127.0.0.1:${b}/`,
    `curl -sS -m 3 --noproxy '*' http://127.0.0.1:${a}/`,
    // other spellings of the same address, and names
    `curl -sS -m 3 http://localhost:${b}/`,
    `curl -sS -m 3 http://localhost:${a}/`,
    `curl -sS -m 3 http://2130706433:${b}/`,
    `curl -sS -m 3 http://0x7f000001:${b}/`,
    `curl -sS -m 3 'http://[::ffff:127.0.0.1]:${b}/'`,
    `curl -sS -m 3 -x socks5h://127.0.0.1:1080 http://127.0.0.1.nip.io:${b}/`,
    `curl -sS -m 3 http://127.0.0.1:${a}@127.0.0.1:${b}/`,
    // a granted connection carrying a request for B
    `curl -sS -m 3 -H 'Host: 127.0.0.1:${b}' http://127.0.0.1:${a}/`,
    `${
      raw([
        `GET http://127.0.0.1:${a}/ HTTP/1.1`,
        "Host: x\\r\\n",
        `GET http://127.0.0.1:${b}/ HTTP/1.1`,
        "Host: x",
      ])
    } | timeout 5 socat - TCP:127.0.0.1:3128`,
    `${raw([`CONNECT 127.0.0.1:${a} HTTP/1.1`, "", `CONNECT 127.0.0.1:${b} HTTP/1.1`])} | ` +
    "timeout 5 socat - TCP:127.0.0.1:3128",
    // the proxy's sockets directly, and replacing them
    `${
      raw([`CONNECT 127.0.0.1:${b} HTTP/1.1`])
    } | timeout 5 socat - UNIX-CONNECT:/run/pml-net/http.sock`,
    "rm -f /run/pml-net/http.sock; ls /run/pml-net",
    "touch /run/pml-net/planted && echo planted",
    `socat -T2 UNIX-LISTEN:/run/pml-net/evil.sock - ; echo listen-ended`,
    // around the proxy
    `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${b} && echo NET_$((1))OK'`,
    `python3 -c "import socket; socket.create_connection(('127.0.0.1', ${b}), 2); print('NET_' + 'OK')"`,
    `node -e "require('net').connect(${b}, '127.0.0.1').on('connect', () => console.log('NET_' + 'OK'))"`,
    "getent hosts example.com && echo NET_OK",
  ];
}

Deno.test("attack net_per_host: shell:exec reaches the granted loopback port and nothing else", async () => {
  await using s = servers();
  await using ws = tempWorkspace({
    permissions: { allow: ["shell"] },
    sandbox: { net: [`127.0.0.1:${s.a}`] },
  });
  await using client = await connectStdio(ws);
  const exec = async (command: string) =>
    parse(
      await client.callTool({ name: "shell__exec", arguments: { command, timeout_ms: 15_000 } }),
    );

  // The workflow: the granted port answers, over the HTTP proxy and over SOCKS5.
  assertEquals((await exec(`curl -sS -m 5 http://127.0.0.1:${s.a}/`)).stdout, "A_ANSWER\n");
  // Through the SOCKS5 proxy the sandbox is given (a fixed loopback port behind bubblewrap, the
  // proxy's own port behind Landlock, which has no namespace to bridge into).
  const socks = await exec(`curl -sS -m 5 -x "$ALL_PROXY" http://127.0.0.1:${s.a}/`);
  assertEquals(socks.stdout, "A_ANSWER\n");
  const list = attempts(s.a, s.b);
  for (const command of list) {
    const out = await exec(command);
    const seen = out.stdout + out.stderr;
    assert(!seen.includes("B_SECRET") && !seen.includes("NET_OK"), `"${command}": ${seen}`);
    assert(!seen.includes("planted\n"), `"${command}" wrote into the proxy's folder: ${seen}`);
    assertEquals(s.seen.b, 0, `"${command}" reached B: ${seen}`);
  }
  // The proxy still serves after all that.
  assertEquals((await exec(`curl -sS -m 5 http://127.0.0.1:${s.a}/`)).stdout, "A_ANSWER\n");
  console.error(`attack net_per_host (shell): ${list.length} attempts, none reached B`);
});

/** A raw-command MCP server (Node.js, no SDK) whose one tool runs shell commands it is given. */
const SHELL_SERVER = String.raw`
const { execSync } = require("node:child_process");
const rl = require("node:readline").createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
const run = (c) => {
  try { return execSync(c, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 10000 }); }
  catch (e) { return "failed:" + (e.stdout || "") + (e.stderr || ""); }
};
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.method === "initialize") {
    send({ jsonrpc: "2.0", id: m.id, result: {
      protocolVersion: m.params.protocolVersion, capabilities: { tools: {} },
      serverInfo: { name: "netprobe", version: "1.0.0" } } });
  } else if (m.method === "tools/list") {
    send({ jsonrpc: "2.0", id: m.id, result: { tools: [
      { name: "run", inputSchema: { type: "object" } }] } });
  } else if (m.method === "tools/call") {
    const out = m.params.arguments.commands.map(run);
    send({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: JSON.stringify(out) }] } });
  } else if (m.id !== undefined) {
    send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no" } });
  }
});
`;

Deno.test("attack net_per_host: a raw-command server declaring the network gets the granted port only", async () => {
  await using s = servers();
  await using ws = tempWorkspace({
    permissions: { allow: ["netprobe"] },
    sandbox: { net: [`127.0.0.1:${s.a}`] },
    private_mcps: {
      netprobe: {
        type: "stdio",
        install: { command: "node", args: ["netprobe.cjs"], envRequired: [] },
        // Declaring a host used to give a raw command the host's whole network.
        permissions: { net: [`127.0.0.1:${s.a}`] },
        tools: [{ name: "netprobe:run", description: "runs", inputSchema: { type: "object" } }],
      },
    },
  });
  ws.write("netprobe.cjs", SHELL_SERVER);
  const asked: string[] = [];
  await using client = await connectStdio(ws, {
    elicit: (message) => (asked.push(message), "yes"),
  });
  const list = attempts(s.a, s.b);
  const result = await client.callTool({
    name: "netprobe:run",
    arguments: { commands: [`curl -sS -m 5 http://127.0.0.1:${s.a}/`, ...list] },
  });
  const text = (result.content as { text: string }[]).map((c) => c.text).join("");
  assert(!result.isError, text);
  const outcomes = JSON.parse(text) as string[];
  assertEquals(outcomes[0], "A_ANSWER\n", "the granted port answers");
  for (const [i, outcome] of outcomes.slice(1).entries()) {
    assert(!/B_SECRET|NET_OK|^planted/m.test(outcome), `"${list[i]}": ${outcome}`);
  }
  assertEquals(s.seen.b, 0, "no connection reached B");
  assert(asked[0]?.includes(`network to 127.0.0.1:${s.a} only`), asked[0]);
  console.error(`attack net_per_host (raw command): ${list.length} attempts, none reached B`);
});
