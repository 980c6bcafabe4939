/**
 * The Seatbelt wall's launch paths, on any OS: what `wallCommand` starts for a sandbox process
 * (the proxy's ports known) and for a stdio dependency (its proxy starts with it: the ports are
 * read at start), run here with a stand-in for `/usr/bin/sandbox-exec` that checks its arguments
 * and runs the command unconfined (what Seatbelt itself holds is the self-test's to show, on the
 * Mac: `seatbelt_canary.ts`).
 */
import { join } from "node:path";
import { assert, assertEquals } from "../testing/assert.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import { sbplAllows, sbplRules } from "../testing/sbpl.ts";
import { commandLaunch } from "../deps/command_launch.ts";
import type { DependencyMeta } from "../deps/metadata.ts";
import { ChildTransport } from "../targets/stdio/child_transport.ts";
import type { JSONRPCMessage } from "../sdk/types.ts";
import { wallCommand } from "./os_sandbox.ts";
import type { OsSandboxStatus } from "./detect_os_sandbox.ts";
import { sandboxPolicy } from "./policy.ts";
import { SANDBOX_EXEC } from "./seatbelt.ts";
import { sandboxEntry } from "../paths.ts";

const SEATBELT: OsSandboxStatus = {
  available: true,
  seatbelt: SANDBOX_EXEC,
  canary: "2026-11-28T04:00:00.000Z",
};

Deno.test("seatbelt launch: a sandbox process runs under sandbox-exec with its profile and the proxy's ports", async () => {
  await using ws = tempWorkspace();
  const policy = sandboxPolicy({
    view: "narrow",
    env: { HOME: ws.home, PATH: "/usr/bin:/bin" },
    write: [ws.dir],
    net: ["127.0.0.1:8080"],
  });
  const own = join(ws.root, "own");
  const started = wallCommand(SEATBELT as never, policy, ws.dir, ["/opt/deno", "run", "x.ts"], {
    denoPath: "/opt/deno",
    privateDir: own,
    proxyPorts: [50001, 50002],
    channel: "stdio",
  });
  assertEquals(started.program, SANDBOX_EXEC);
  const [d1, http, d2, socks, p, profile, ...command] = started.args;
  assertEquals([d1, http, d2, socks, p], [
    "-D",
    "PML_PROXY_HTTP_PORT=50001",
    "-D",
    "PML_PROXY_SOCKS_PORT=50002",
    "-p",
  ]);
  assertEquals(command, ["/opt/deno", "run", "x.ts"]);
  const rules = sbplRules(profile, {
    PML_PROXY_HTTP_PORT: "50001",
    PML_PROXY_SOCKS_PORT: "50002",
  });
  const allows = (op: string, path: string) => sbplAllows(rules, { op, path });
  assert(allows("file-write-create", join(own, "tmp", "x")), "the private folder is writable");
  assert(allows("file-write-data", join(ws.dir, "a.txt")) && allows("file-read-data", ws.dir));
  assert(!allows("file-write-create", join(ws.root, "elsewhere")));
  // Deno and PML's own code (the sandbox's entry) are readable, as bubblewrap binds them.
  assert(
    allows("file-read-data", sandboxEntry("std_entry")) && allows("file-read-data", "/opt/deno"),
  );
  const tcp = (port: number) => ({
    op: "network-outbound" as const,
    remote: { proto: "tcp" as const, host: "127.0.0.1", port },
  });
  assertEquals([50001, 50002, 8080].map((port) => sbplAllows(rules, tcp(port))), [
    true,
    true,
    false,
  ]);
});

Deno.test("seatbelt launch: a raw command's proxy ports reach sandbox-exec's parameters and the proxy variables at start; its private folder lives as long as it does", async () => {
  await using ws = tempWorkspace();
  // The stand-in: checks the profile is given, hands the parameters on, runs the command.
  const stub = join(ws.root, "sandbox-exec");
  Deno.writeTextFileSync(
    stub,
    `#!/bin/sh
params=""
while [ "$1" = "-D" ]; do params="$params $2"; shift 2; done
[ "$1" = "-p" ] && [ -n "$2" ] || { echo "no profile" >&2; exit 64; }
shift 2
PML_PARAMS="$params" exec "$@"
`,
  );
  Deno.chmodSync(stub, 0o755);
  const meta: DependencyMeta = {
    server: "raw",
    fqdn: "raw",
    description: "a raw command",
    command: "sh",
    args: [
      "-c",
      `printf '{"jsonrpc":"2.0","method":"seen","params":{"params":"%s","http":"%s","all":"%s","tmp":"%s","tmpExists":%s}}\\n' ` +
      `"$PML_PARAMS" "$HTTP_PROXY" "$ALL_PROXY" "$TMPDIR" "$([ -d "$TMPDIR" ] && echo true || echo false)"; sleep 30`,
    ],
    envRequired: [],
    permissions: { read: [], write: [], net: ["registry.test"], env: [] },
    tools: [],
    allowedToolPatterns: [],
    source: "private_mcps",
  };
  const spec = commandLaunch(meta, {
    workspace: ws.dir,
    env: { PATH: "/usr/bin:/bin" },
    depsDir: ws.root,
    osSandbox: SEATBELT,
  });
  assertEquals(spec.netProxy?.tcp, true);
  const own = spec.seatbelt!.privateDir;
  assertEquals(spec.landlock, undefined);
  assert(own && !own.startsWith(ws.dir), "a private folder outside the workspace");
  assertEquals(spec.env.TMPDIR, join(own, "tmp"));
  assert(spec.args[1].includes(SANDBOX_EXEC));
  const transport = new ChildTransport({
    ...spec,
    args: [spec.args[0], spec.args[1].replace(SANDBOX_EXEC, stub), ...spec.args.slice(2)],
  }, { onStderr: () => {} });
  const seen = new Promise<Record<string, unknown>>((resolve) => {
    transport.onmessage = (m: JSONRPCMessage) =>
      resolve((m as unknown as { params: Record<string, unknown> }).params);
  });
  await transport.start();
  try {
    const got = await seen;
    const [http, socks] = Deno.readTextFileSync(join(spec.netProxy!.dir, "ports")).trim()
      .split(" ");
    assertEquals(got.params, ` PML_PROXY_HTTP_PORT=${http} PML_PROXY_SOCKS_PORT=${socks}`);
    assertEquals(got.http, `http://127.0.0.1:${http}`);
    assertEquals(got.all, `socks5h://127.0.0.1:${socks}`);
    assertEquals([got.tmp, got.tmpExists], [join(own, "tmp"), true]);
    // Made this user's only: a folder planted there before would have been refused.
    assertEquals(Deno.statSync(own).mode! & 0o777, 0o700);
  } finally {
    await transport.close();
  }
  let gone = false;
  try {
    Deno.statSync(own);
  } catch {
    gone = true;
  }
  assert(gone, "the private folder is removed when the command ends");
});
