import { assert, assertEquals, assertStringIncludes, assertThrows } from "../testing/assert.ts";
import { createAuditLog } from "../audit/audit.ts";
import { NpmInstaller } from "../deps/installer.ts";
import { createRoutingResolver } from "../routing/routing.ts";
import { StdTarget } from "../targets/std/std_target.ts";
import {
  gatewayFor,
  type TempWorkspace,
  tempWorkspace,
  testConfig,
  textOf,
} from "../testing/workspace.ts";
import { bwrapArgs, osCommand, type OsPolicy } from "./os_sandbox.ts";
import { detectOsSandbox, detectOsSandboxSoon, wallName } from "./detect_os_sandbox.ts";
import { SandboxPool } from "./pool.ts";
import { DENO_LIMITS } from "./limits.ts";

/** A policy with nothing in it, for the renderer's tests to fill. */
const EMPTY: OsPolicy = {
  read: [],
  write: [],
  denyRead: [],
  denyWrite: [],
  net: [],
  identity: { uid: 65534, gid: 65534 },
  sockets: [],
  limits: DENO_LIMITS,
};

Deno.test("bwrapArgs: namespaces, an unprivileged uid, /proc/sys read-only, grants as given, control files over them", async () => {
  await using ws = tempWorkspace();
  ws.write(".mcp.json", "{}");
  ws.write(".pml.json", "{}");
  const args = bwrapArgs(
    {
      ...EMPTY,
      read: ["/usr", "/grant/ro"],
      write: [ws.dir],
      denyWrite: [`${ws.dir}/.pml.json`, `${ws.dir}/.mcp.json`, `${ws.dir}/.nope`],
    },
    ws.dir,
    ["deno", "run", "x.ts"],
    "/opt/deno/deno",
  );
  const text = args.join(" ");
  assertStringIncludes(text, "--unshare-all --unshare-user --uid 65534 --gid 65534");
  assertStringIncludes(text, "--die-with-parent --new-session --cap-drop ALL --proc /proc");
  assertStringIncludes(text, "--ro-bind-try /proc/sys /proc/sys");
  assert(!args.includes("--share-net"));
  assertStringIncludes(text, "--ro-bind-try /usr /usr");
  assertStringIncludes(text, "--ro-bind-try /opt/deno /opt/deno");
  assertStringIncludes(text, "--ro-bind-try /grant/ro /grant/ro");
  assertStringIncludes(text, `--bind-try ${ws.dir} ${ws.dir}`);
  // Protected files come after the writable bind, so they win; missing ones are not bound.
  assert(text.indexOf(`--ro-bind ${ws.dir}/.mcp.json`) > text.indexOf(`--bind-try ${ws.dir}`));
  assertStringIncludes(text, `--ro-bind ${ws.dir}/.pml.json`);
  assert(!text.includes(".nope"));
  // The folder of a nested control file is a mount point of its own (cannot be moved away).
  ws.write(".vscode/mcp.json", "{}");
  const nested = bwrapArgs(
    { ...EMPTY, write: [ws.dir], denyWrite: [`${ws.dir}/.vscode/mcp.json`] },
    ws.dir,
    ["x"],
  ).join(" ");
  const folder = nested.indexOf(`--bind-try ${ws.dir}/.vscode ${ws.dir}/.vscode`);
  assert(folder > nested.indexOf(`--bind-try ${ws.dir} ${ws.dir}`), nested);
  assert(nested.indexOf(`--ro-bind ${ws.dir}/.vscode/mcp.json`) > folder, nested);
  assert(!text.includes(`--bind ${ws.dir} `), "the workspace is not bound twice");
  assertEquals(args.slice(-4), ["--", "deno", "run", "x.ts"]);
  // Network grants never share the host's network: the proxy's folder is bound, the command
  // starts behind the bridge; without the folder the policy is refused.
  const net = { ...EMPTY, net: ["127.0.0.1:8080"] };
  const granted = bwrapArgs(net, "/", ["x"], "/opt/deno/deno", "/tmp/pml-net-a");
  assert(!granted.includes("--share-net"));
  assertStringIncludes(granted.join(" "), "--ro-bind /tmp/pml-net-a /run/pml-net");
  assertEquals(granted.at(-1), "x");
  assertStringIncludes(granted.join(" "), "socat TCP-LISTEN:3128");
  assertThrows(() => bwrapArgs(net, "/", ["x"]));
});

Deno.test("bwrapArgs: a more specific path wins, a deny wins at the same path, secrets only where visible", async () => {
  await using ws = tempWorkspace();
  ws.write("home/.ssh/id_ed25519", "KEY");
  ws.write("home/.npmrc", "//registry/:_authToken=T");
  ws.write("home/.pml/deno/x", "");
  const home = `${ws.dir}/home`;
  const args = bwrapArgs(
    {
      ...EMPTY,
      read: [home, `${home}/.pml/deno`],
      denyRead: [`${home}/.ssh`, `${home}/.npmrc`, `${home}/.pml`, "/nowhere/.aws"],
    },
    "/",
    ["x"],
  );
  const text = args.join(" ");
  const at = (part: string) => {
    const i = text.indexOf(part);
    assert(i >= 0, `${part} in ${text}`);
    return i;
  };
  assert(at(`--tmpfs ${home}/.ssh`) > at(`--ro-bind-try ${home} ${home}`));
  assertStringIncludes(text, `--ro-bind /dev/null ${home}/.npmrc`);
  // A read grant inside a secret (a human's choice) is bound after it, so it is visible.
  assert(at(`--ro-bind-try ${home}/.pml/deno`) > at(`--tmpfs ${home}/.pml `));
  // Hidden folders are made read-only last, once what is inside them is mounted.
  assert(at(`--remount-ro ${home}/.pml`) > at(`--ro-bind-try ${home}/.pml/deno`));
  assert(!text.includes("/nowhere"), "a secret nothing shows is not rendered");
});

Deno.test("bwrapArgs: a path through a link inside a shown folder is mounted where the link leads; elsewhere as named", async () => {
  await using ws = tempWorkspace();
  const home = `${ws.dir}/home`;
  ws.write("home/dotfiles/aws/credentials", "KEY");
  ws.write("home/shared/node_modules/x/index.js", "");
  ws.write("home/code/app/README.md", "");
  Deno.symlinkSync(`${home}/dotfiles/aws`, `${home}/.aws`);
  Deno.symlinkSync(`${home}/shared/node_modules`, `${home}/code/app/node_modules`);
  const outside = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-link-" }));
  try {
    Deno.symlinkSync(`${home}/shared/node_modules`, `${outside}/node_modules`);
    const args = bwrapArgs(
      {
        ...EMPTY,
        read: [
          home,
          `${home}/code/app/node_modules`,
          `${home}/code/app/node_modules/x`,
          `${outside}/node_modules`,
        ],
        denyRead: [`${home}/.aws`, `${home}/dotfiles/aws`],
      },
      "/",
      ["x"],
    );
    const text = args.join(" ");
    const bound = (path: string) => text.includes(`--ro-bind-try ${path} ${path}`);
    assert(bound(`${home}/shared/node_modules`), text);
    assert(bound(`${home}/shared/node_modules/x`), text);
    assert(!text.includes(`${home}/code/app/node_modules`), text);
    // Hidden where its files are, once (bubblewrap could not mount on the link).
    assertEquals(text.split(`--tmpfs ${home}/dotfiles/aws`).length, 2, text);
    assert(!text.includes(`${home}/.aws`), text);
    // A link that no shown folder holds is mounted as named: the path must exist inside.
    assert(bound(`${outside}/node_modules`), text);
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("detectOsSandbox: a PATH without bwrap says what to install", () => {
  const status = detectOsSandbox("/nonexistent", "bubblewrap");
  assert(!status.available);
  assertStringIncludes(status.reason, "bubblewrap is not installed");
  assertStringIncludes(status.reason, "apt-get install bubblewrap");
});

/**
 * A stand-in for a bubblewrap refused by the machine (no user namespaces in a container): it prints
 * `error` on stderr and exits 1. Returns the folder to use as PATH.
 */
function refusedBwrap(ws: TempWorkspace, dir: string, error: string): string {
  ws.write(`${dir}/bwrap`, `#!/bin/sh\necho '${error}' >&2\nexit 1\n`);
  Deno.chmodSync(`${ws.dir}/${dir}/bwrap`, 0o755);
  return `${ws.dir}/${dir}`;
}

Deno.test("detectOsSandbox: a bwrap that cannot create namespaces is reported with its error", async () => {
  await using ws = tempWorkspace();
  const status = detectOsSandbox(
    refusedBwrap(ws, "bin", "bwrap: setting up uid map: Permission denied"),
    "bubblewrap",
  );
  assert(!status.available);
  assertStringIncludes(status.reason, "cannot create namespaces");
  assertStringIncludes(status.reason, "uid map: Permission denied");
});

Deno.test("detectOsSandboxSoon: the same answers as detectOsSandbox, without blocking, from one cache", async () => {
  await using ws = tempWorkspace();
  const refusedPath = refusedBwrap(ws, "refused", "bwrap: No permissions to create new namespace");
  ws.write("broken/bwrap", "cannot be started: not executable");
  Deno.chmodSync(`${ws.dir}/broken/bwrap`, 0o644);
  const refused = await detectOsSandboxSoon(refusedPath, "bubblewrap");
  assert(!refused.available);
  assertStringIncludes(refused.reason, "cannot create namespaces here (bwrap: No permissions");
  const broken = await detectOsSandboxSoon(`${ws.dir}/broken`, "bubblewrap");
  assert(!broken.available);
  assertStringIncludes(broken.reason, "bubblewrap failed");
  const missing = await detectOsSandboxSoon(`${ws.dir}/none`, "bubblewrap");
  assert(!missing.available);
  assertStringIncludes(missing.reason, "bubblewrap is not installed");
  // Cached: the synchronous form answers the same for the same PATH without probing again.
  Deno.removeSync(`${ws.dir}/refused/bwrap`);
  assertEquals(detectOsSandbox(refusedPath, "bubblewrap"), refused);
  const here = await detectOsSandboxSoon(undefined, "bubblewrap");
  assert(here.available, here.available ? "" : here.reason);
  assertEquals(detectOsSandbox(undefined, "bubblewrap"), here);
});

Deno.test("detectOsSandbox: where bubblewrap is missing or refused, Landlock stands in, with the reason", async () => {
  await using ws = tempWorkspace();
  const refusedPath = refusedBwrap(ws, "r", "bwrap: No permissions to create new namespace");
  for (const [path, why] of [["/nonexistent", "not installed"], [refusedPath, "No permissions"]]) {
    const status = detectOsSandbox(path);
    assertEquals(wallName(status), "landlock", JSON.stringify(status));
    assert(status.available && "landlock" in status && status.landlock >= 1);
    assertStringIncludes(status.why, why);
  }
  // Forced (the suites run under each wall): Landlock even where bubblewrap works; none at all.
  assertEquals(wallName(detectOsSandbox(undefined, "landlock")), "landlock");
  const none = detectOsSandbox(undefined, "none");
  assert(!none.available);
  assertStringIncludes(none.reason, "PML_SANDBOX_WALL=none");
});

Deno.test("detectOsSandbox: this machine's bwrap works (the suite needs it: .ci/run installs it)", () => {
  const status = detectOsSandbox(undefined, "bubblewrap");
  assert(status.available, status.available ? "" : status.reason);
});

const SHELL = { permissions: { allow: ["shell"] } };
const MISSING = () => ({ available: false as const, reason: "bubblewrap is not installed (test)" });

Deno.test("shell:exec without an OS sandbox is refused with what to install; nothing runs", async () => {
  await using ws = tempWorkspace(SHELL);
  await using g = await gatewayFor(ws, { detectOs: MISSING });
  const r = await g.client.callTool({
    name: "shell:exec",
    arguments: { command: "touch ran.txt" },
  });
  assert(r.isError);
  assertStringIncludes(textOf(r), "no OS sandbox");
  assertStringIncludes(textOf(r), "bubblewrap is not installed");
  assertStringIncludes(textOf(r), '"unconfined": true');
  assert(!(await Deno.stat(`${ws.dir}/ran.txt`).catch(() => false)));
  assertStringIncludes(ws.read(".pml/audit.log"), "no OS sandbox");
});

Deno.test("shell:exec with sandbox.unconfined runs and says so in its result", async () => {
  await using ws = tempWorkspace({ ...SHELL, sandbox: { unconfined: true } });
  await using g = await gatewayFor(ws, { detectOs: MISSING });
  const r = await g.client.callTool({ name: "shell:exec", arguments: { command: "echo hi" } });
  assert(!r.isError, textOf(r));
  assertStringIncludes(textOf(r), "ran UNCONFINED");
  assertStringIncludes(textOf(r), '"stdout":"hi\\n"');
});

Deno.test("shell:exec: a timeout_ms past the host's own timeout gets its time (the sandbox is not killed first)", async () => {
  await using ws = tempWorkspace(SHELL);
  const pool = new SandboxPool();
  const std = new StdTarget({
    config: testConfig(ws),
    pool,
    audit: createAuditLog(ws.dir),
    routing: createRoutingResolver(),
    timeoutMs: 200,
  });
  const ctx = {
    callTool: () => Promise.reject(new Error("no nested calls here")),
    ask: () => Promise.reject(new Error("nothing to ask")),
  };
  try {
    const r = await std.call({
      toolId: "shell:exec",
      ns: "shell",
      action: "exec",
      args: { command: "sleep 1; echo done", timeout_ms: 30_000 },
    }, ctx);
    assert(!r.isError, textOf(r));
    assertStringIncludes(textOf(r), '"stdout":"done\\n"');
    // Without one, the host's timeout holds.
    const cut = await std.call({
      toolId: "shell:exec",
      ns: "shell",
      action: "exec",
      args: { command: "sleep 5" },
    }, ctx);
    assert(cut.isError);
    assertStringIncludes(textOf(cut), "timed out after 200 ms");
  } finally {
    await pool.close();
  }
});

/** Stdio dependencies install as users do (npm, its cache first). */
const npm = new NpmInstaller({ env: Deno.env.toObject() });

Deno.test("stdio dependency without an OS sandbox: refused with what to install, before anything is asked or installed", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["memory"] } });
  const asked: string[] = [];
  await using g = await gatewayFor(ws, {
    stdio: { installer: npm, osSandbox: MISSING() },
    elicit: (m) => (asked.push(m), "yes"),
  });
  const r = await g.client.callTool({ name: "memory__read_graph", arguments: {} });
  assert(r.isError);
  assertStringIncludes(textOf(r), '"memory" was not started');
  assertStringIncludes(textOf(r), "bubblewrap is not installed");
  assertStringIncludes(textOf(r), '"unconfined": true');
  assertEquals((r.structuredContent as { code?: string }).code, "NO_OS_SANDBOX");
  assertEquals(asked, [], "nothing was asked");
  assert(!(await Deno.stat(`${ws.dir}/.pml/deps`).catch(() => false)), "nothing was installed");
  assertStringIncludes(ws.read(".pml/audit.log"), "no OS sandbox");
});

Deno.test("stdio dependency with sandbox.unconfined and no OS sandbox: runs, and every result says so", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: ["memory"] },
    sandbox: { unconfined: true },
  });
  await using g = await gatewayFor(ws, {
    stdio: { installer: npm, osSandbox: MISSING() },
    elicit: () => "yes",
  });
  for (let i = 0; i < 2; i++) {
    const r = await g.client.callTool({ name: "memory__read_graph", arguments: {} });
    assert(!r.isError, textOf(r));
    assert(textOf(r).startsWith("[pml: ran UNCONFINED (bubblewrap is not installed (test))"));
    assertStringIncludes(textOf(r), "entities");
  }
});

/** A `private_mcps` raw command (no npm package): here, one that fails at once. */
const RAW = {
  flaky: {
    type: "stdio",
    install: { command: "sh", args: ["-c", "echo boom >&2; exit 3"], envRequired: [] },
    tools: [{ name: "flaky:go", description: "crashes", inputSchema: { type: "object" } }],
  },
};

Deno.test("raw command without an OS sandbox: refused with what to install, before anything is asked", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["flaky"] }, private_mcps: RAW });
  const asked: string[] = [];
  await using g = await gatewayFor(ws, {
    stdio: { installer: npm, osSandbox: MISSING() },
    elicit: (m) => (asked.push(m), "yes"),
  });
  const r = await g.client.callTool({ name: "flaky:go", arguments: {} });
  assert(r.isError);
  assertStringIncludes(textOf(r), '"flaky" was not started');
  assertEquals((r.structuredContent as { code?: string }).code, "NO_OS_SANDBOX");
  assertEquals(asked, [], "nothing was asked");
});

Deno.test("raw command with sandbox.unconfined and no OS sandbox: the question says UNCONFINED", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: ["flaky"] },
    sandbox: { unconfined: true },
    private_mcps: RAW,
  });
  const asked: string[] = [];
  await using g = await gatewayFor(ws, {
    stdio: { installer: npm, osSandbox: MISSING() },
    elicit: (m) => (asked.push(m), "yes"),
  });
  const r = await g.client.callTool({ name: "flaky:go", arguments: {} });
  assert(r.isError);
  assertStringIncludes(textOf(r), "boom", "it ran");
  assertEquals(asked.length, 1);
  assertStringIncludes(asked[0], "runs UNCONFINED with your home");
});

Deno.test("pool: a sandbox whose OS policy changed is replaced; the old one finishes its call, then ends", async () => {
  await using ws = tempWorkspace(SHELL);
  const pool = new SandboxPool({ onStderr: () => {} });
  const std = new StdTarget({
    config: testConfig(ws),
    pool,
    audit: createAuditLog(ws.dir),
    routing: createRoutingResolver(),
  });
  try {
    const before = std.specFor("run");
    const old = pool.get(before);
    const running = old.call({
      ns: "shell",
      action: "exec",
      args: { command: "sleep 0.3; echo finished" },
      workspace: ws.dir,
    }, { timeoutMs: 20_000 });
    ws.write(".mcp.json", "{}"); // the human adds a control file: it must be bound read-only
    const after = std.specFor("run");
    assert(after.os!.denyWrite.includes(`${ws.dir}/.mcp.json`));
    const fresh = pool.get(after);
    assert(fresh !== old, "a new sandbox for the new policy");
    assertEquals(pool.get(after), fresh, "and it is kept");
    assertEquals((await running as { stdout: string }).stdout, "finished\n");
    await old.exited;
    assert(fresh.alive);
  } finally {
    await pool.close();
  }
});

Deno.test("osCommand: a shell moves the channel to fds 3 and 4 and opens the seccomp program, quoted", () => {
  const { program, args } = osCommand(
    "/usr/bin/bwrap",
    EMPTY,
    "/",
    ["deno", "run", "x.ts"],
    { channel: "fds", seccomp: "/tmp/a dir/it's.bpf" },
  );
  assertEquals(program, "/bin/sh");
  assertEquals(args[0], "-c");
  assertEquals(
    args[1],
    `exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null 5<'/tmp/a dir/it'\\''s.bpf'`,
  );
  assertEquals(args.slice(2, 5), ["/usr/bin/bwrap", "--seccomp", "5"]);
  // A policy that needs unix sockets (a granted SSH agent) gets no filter.
  const agent = osCommand(
    "/usr/bin/bwrap",
    { ...EMPTY, sockets: ["/run/agent.sock"] },
    "/",
    ["x"],
    {
      seccomp: "/f.bpf",
    },
  );
  assert(!agent.args.includes("--seccomp"));
  assertEquals(agent.args[1], `exec "$0" "$@"`);
});
