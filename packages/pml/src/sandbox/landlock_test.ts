import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import { allowedBeneath, FS, handledFs, landlockAbi, landlockPlan } from "./landlock.ts";
import { landlockCommand } from "./landlock_command.ts";
import { libcPath } from "./libc.ts";
import { sandboxPolicy } from "./policy.ts";
import { landlockFilter } from "./seccomp.ts";
import { NetProxy } from "./net_proxy.ts";

const ABI = landlockAbi(libcPath());
const READ = FS.EXECUTE | FS.READ_FILE | FS.READ_DIR;

Deno.test("allowedBeneath: a root holding a secret is listed, the secret never in the set; a grant inside a secret stays", async () => {
  await using ws = tempWorkspace();
  for (const f of ["home/.ssh/id_ed25519", "home/.config/gh/hosts.yml", "home/.config/git/x"]) {
    ws.write(f, "s");
  }
  ws.write("home/notes.txt", "n");
  ws.write("home/.ssh/known_hosts", "k");
  const home = join(ws.dir, "home");
  const secrets = [join(home, ".ssh"), join(home, ".config/gh")];
  const rules = allowedBeneath([home, join(home, ".ssh/known_hosts")], secrets, READ);
  const paths = rules.map((r) => r.path);
  assert(!paths.some((p) => p === join(home, ".ssh") || p.startsWith(join(home, ".config/gh"))));
  // The home and `.config` are listable only; their other entries whole.
  assertEquals(rules.find((r) => r.path === home)?.access, FS.READ_DIR);
  assertEquals(rules.find((r) => r.path === join(home, ".config"))?.access, FS.READ_DIR);
  assert(paths.includes(join(home, ".config/git")));
  // A file gets only the rights a file can carry.
  assertEquals(
    rules.find((r) => r.path === join(home, "notes.txt"))?.access,
    FS.EXECUTE | FS.READ_FILE,
  );
  // More specific wins: the grant of a file inside the secret folder.
  assert(paths.includes(join(home, ".ssh/known_hosts")));
  // A root that is a secret itself is left out.
  assertEquals(allowedBeneath([join(home, ".ssh")], secrets, READ), []);
});

Deno.test("landlockPlan: the ABI decides what is handled: refer, truncate, TCP, scopes", () => {
  const policy = sandboxPolicy({ view: "narrow", env: {}, write: [Deno.cwd()] });
  const v1 = landlockPlan(policy, 1);
  assertEquals(v1.handledFs, handledFs(1));
  assertEquals(v1.handledNet, 0);
  assertEquals(v1.scoped, 0);
  assert(v1.rules.every((r) => (r.access & ~handledFs(1)) === 0));
  const v6 = landlockPlan(policy, 6);
  assertEquals(v6.handledNet, 3);
  assertEquals(v6.scoped, 3);
  assert((v6.handledFs & FS.TRUNCATE) !== 0 && (v6.handledFs & FS.REFER) !== 0);
});

Deno.test("landlockFilter: one program per architecture, and none for an unknown one", () => {
  for (const arch of ["x86_64", "aarch64"]) {
    const bytes = landlockFilter({ unix: false, tcp: true }, arch)!;
    assert(bytes.length > 0 && bytes.length % 8 === 0 && bytes.length / 8 < 64);
  }
  assertEquals(landlockFilter({ unix: false, tcp: true }, "riscv64"), undefined);
});

/** Runs `script` behind Landlock under a toolbox policy writing `ws.dir/w`; stdout and stderr. */
async function behind(
  ws: { dir: string; home: string },
  script: string,
  opts: { net?: string[] } = {},
): Promise<string> {
  Deno.mkdirSync(join(ws.dir, "w"), { recursive: true });
  const policy = sandboxPolicy({
    view: "toolbox",
    env: { HOME: ws.home, PATH: "/usr/bin:/bin" },
    write: [join(ws.dir, "w")],
    net: opts.net,
  });
  const proxy = opts.net ? new NetProxy(opts.net, { tcp: true }) : undefined;
  const own = Deno.makeTempDirSync();
  try {
    const { program, args } = landlockCommand(ABI, policy, ["/bin/sh", "-c", script], {
      netDir: proxy?.dir,
      privateDir: own,
    });
    const out = await new Deno.Command(program, {
      args,
      cwd: join(ws.dir, "w"),
      env: {
        PATH: "/usr/bin:/bin",
        HOME: ws.home,
        TMPDIR: own,
        http_proxy: "http://127.0.0.1:3128",
      },
      clearEnv: true,
      stdin: "null",
    }).output();
    const dec = new TextDecoder();
    return dec.decode(out.stdout) + dec.decode(out.stderr);
  } finally {
    proxy?.close();
    Deno.removeSync(own, { recursive: true });
  }
}

Deno.test({
  name:
    "attack landlock: secrets, writes outside, UDP, TCP past the proxy, signals to pml all refused; the workspace works",
  ignore: ABI < 6,
  fn: async () => {
    await using ws = tempWorkspace();
    ws.write("../home/.ssh/id_ed25519", "SECRET_KEY");
    ws.write("../home/.aws/credentials", "SECRET_AWS");
    ws.write("../home/.gitconfig", "[user]\n\tname = Visible\n");
    ws.write("outside.txt", "OUTSIDE");
    const udp =
      `python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM); print('UDP_' + 'OK')"`;
    const tcp =
      `python3 -c "import socket; socket.create_connection(('127.0.0.1', 9), 1); print('TCP_' + 'OK')"`;
    const out = await behind(
      ws,
      [
        `cat ${ws.home}/.ssh/id_ed25519 ${ws.home}/.aws/credentials /etc/shadow`,
        `echo planted > ${ws.dir}/outside.txt`,
        `echo planted > ${ws.home}/.bashrc`,
        "echo planted > /tmp/pml-landlock-planted",
        udp,
        tcp,
        `kill -0 ${Deno.pid} && echo SIGNAL_OK`,
        `cat /proc/${Deno.pid}/environ && echo ENVIRON_OK`,
        // The toolbox and the workspace, beside the attacks.
        `cat ${ws.home}/.gitconfig`,
        "echo inside > made.txt && cat made.txt",
        'echo tmp > "$TMPDIR/t" && cat "$TMPDIR/t"',
      ].join("; "),
    );
    for (const leak of ["SECRET_", "UDP_OK", "TCP_OK", "SIGNAL_OK", "ENVIRON_OK"]) {
      assert(!out.includes(leak), `${leak}: ${out}`);
    }
    assertEquals(ws.read("outside.txt"), "OUTSIDE");
    assert(!(await Deno.stat("/tmp/pml-landlock-planted").catch(() => false)));
    assertStringIncludes(out, "Visible");
    assertStringIncludes(out, "inside\n");
    assertStringIncludes(out, "tmp\n");
  },
});

Deno.test({
  name: "attack landlock: a granted host is reached through the proxy's port; no other port",
  ignore: ABI < 6,
  fn: async () => {
    await using ws = tempWorkspace();
    const granted = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("GRANTED"),
    );
    const other = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("OTHER_SECRET"),
    );
    try {
      const a = granted.addr.port;
      const b = other.addr.port;
      const out = await behind(
        ws,
        [
          `curl -sS -m 5 http://127.0.0.1:${a}/; echo`,
          `curl -sS -m 5 http://127.0.0.1:${b}/; echo`,
          `curl -sS -m 5 --noproxy '*' http://127.0.0.1:${b}/; echo`,
        ].join("; "),
        { net: [`127.0.0.1:${a}`] },
      );
      assertStringIncludes(out, "GRANTED");
      assert(!out.includes("OTHER_SECRET"), out);
    } finally {
      await granted.shutdown();
      await other.shutdown();
    }
  },
});

Deno.test({
  name: "landlock init: what a command detaches ends with the sandbox",
  ignore: ABI < 6,
  fn: async () => {
    await using ws = tempWorkspace();
    const marker = `sleep 1${Date.now() % 100000}`;
    await behind(ws, `setsid sh -c '${marker}' >/dev/null 2>&1 < /dev/null & echo started`);
    const alive = () =>
      [...Deno.readDirSync("/proc")].flatMap((e) => {
        try {
          const cmd = Deno.readTextFileSync(`/proc/${e.name}/cmdline`).replaceAll("\0", " ");
          return /^\d+$/.test(e.name) && cmd.includes(marker) ? [cmd] : [];
        } catch {
          return [];
        }
      });
    // A killed process shows until the kernel has taken it down: looked at until it is gone.
    for (let i = 0; i < 200 && alive().length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    assertEquals(
      alive(),
      [],
      "the detached sleep was killed with the sandbox",
    );
  },
});
