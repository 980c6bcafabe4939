/**
 * Attack: the read model and the identity of the sandboxes that run programs (DESIGN §13
 * "Sandbox model"), from `shell:exec` and from a dependency (a raw declared command), with `pml`
 * running as the user the suite runs as (root here and in CI). The machine is readable as a
 * toolbox; the secrets are not, nor other users' homes, nor what only root may read; the kernel's
 * writable files (`kernel.core_pattern`: with `|prog` the kernel runs `prog` as host root) are
 * read-only; the sandbox is never uid 0 inside. Families: secrets_read, identity.
 *
 * Kernel files are only opened for writing (`exec 3>>`), never written: a refused open is the
 * wall, and nothing of the host changes whatever the outcome.
 */
import { join } from "node:path";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { commandLaunch } from "../../packages/pml/src/deps/command_launch.ts";
import { parseStdioMetadata } from "../../packages/pml/src/deps/metadata.ts";
import { HOME_SECRETS } from "../../packages/pml/src/sandbox/host_view.ts";

const MARK = "SECRET_MARK_91";

/** A HOME holding every built-in secret (folders get a file inside), each containing MARK. */
function secretHome(home: string): string[] {
  const made: string[] = [];
  for (const rel of HOME_SECRETS) {
    const path = join(home, rel);
    const isFile = /\.(json|toml|yml|tfrc\.json)$|credentials$|history$|token$|^\.[a-z]*rc$/.test(
      rel.split("/").pop()!,
    ) || rel === ".git-credentials" || rel === ".claude.json";
    const file = isFile ? path : join(path, "secret");
    Deno.mkdirSync(join(file, ".."), { recursive: true });
    Deno.writeTextFileSync(file, MARK);
    made.push(file);
  }
  return made;
}

/**
 * Another user's home and a file only root may read, made for the test where the suite can
 * (as root); removed after. `undefined` entries where it cannot.
 */
function othersFiles(): { paths: string[]; dispose: () => void } {
  const paths: string[] = [];
  const dirs: string[] = [];
  for (const parent of ["/home", "/root"]) {
    try {
      const dir = Deno.makeTempDirSync({ dir: parent, prefix: "pml-other-user-" });
      Deno.writeTextFileSync(join(dir, "secret.txt"), MARK);
      dirs.push(dir);
      paths.push(join(dir, "secret.txt"));
    } catch { /* not ours to write (not root) */ }
  }
  return {
    paths,
    dispose: () => dirs.forEach((d) => Deno.removeSync(d, { recursive: true })),
  };
}

/**
 * The probe script: reads each path given (prints MARK if it gets through), tries to open the
 * kernel's writable files for writing, and prints its uid. One line per attempt.
 */
const PROBE = `
for f in "$@"; do
  if head -c 64 "$f" 2>/dev/null | grep -q . ; then echo "READ $f: $(head -c 64 "$f")"; else echo "refused $f"; fi
done
for k in /proc/sys/kernel/core_pattern /proc/sys/kernel/modprobe /proc/sys/vm/drop_caches /proc/sysrq-trigger; do
  if ( exec 3>>"$k" ) 2>/dev/null; then echo "WRITABLE $k"; else echo "refused $k"; fi
done
echo "uid=$(id -u) caps=$(grep CapEff /proc/self/status | cut -f2) nnp=$(grep NoNewPrivs /proc/self/status | cut -f2)"
`;

/** What the probe says about what should have been refused. */
function breaches(out: string): string[] {
  return out.split("\n").filter((l) =>
    l.startsWith("READ ") || l.startsWith("WRITABLE ") || /^uid=0 /.test(l) ||
    (l.startsWith("uid=") && !/caps=0{16} nnp=1/.test(l))
  );
}

function targets(home: string, others: string[]): string[] {
  return [
    ...secretHome(home),
    ...others,
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    ...["/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key"].filter((p) => {
      try {
        return Deno.statSync(p).isFile;
      } catch {
        return false;
      }
    }),
  ];
}

Deno.test("attack secrets_read + identity from shell:exec: no secret, no other home, no kernel knob, never uid 0", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell"] } });
  // `.pml.json` adds a secret of its own to the built-in ones.
  const own = join(ws.home, "private-notes", "plan.txt");
  Deno.mkdirSync(join(own, ".."));
  Deno.writeTextFileSync(own, MARK);
  ws.write(
    ".pml.json",
    JSON.stringify({ permissions: { allow: ["shell"] }, sandbox: { deny: [join(own, "..")] } }),
  );
  const others = othersFiles();
  try {
    const paths = [...targets(ws.home, others.paths), own];
    Deno.writeTextFileSync(join(ws.home, ".gitconfig"), "[user]\n\tname = Visible\n");
    await using gw = await gatewayFor(ws);
    const result = await gw.client.callTool({
      name: "shell:exec",
      arguments: { command: "sh", args: ["-c", PROBE, "probe", ...paths] },
    });
    const text = textOf(result);
    const out = JSON.parse(text.slice(text.indexOf("{"))).stdout as string;
    assertEquals(breaches(out), [], out);
    assert(out.includes(`uid=`), out);
    // The toolbox beside it: the home's ordinary files are readable.
    const home = await gw.client.callTool({
      name: "shell:exec",
      arguments: { command: "git config --global user.name" },
    });
    assert(textOf(home).includes("Visible"), textOf(home));
    console.error(
      `attack secrets_read + identity (shell): ${paths.length + 5} attempts, none got through`,
    );
  } finally {
    others.dispose();
  }
});

Deno.test("attack secrets_read + identity from a dependency (raw command): the same walls", async () => {
  await using ws = tempWorkspace();
  const others = othersFiles();
  try {
    const paths = targets(ws.home, others.paths);
    const meta = parseStdioMetadata("probe", {
      type: "stdio",
      install: { command: "sh", args: ["-c", PROBE, "probe", ...paths] },
      tools: [{ name: "probe:go", inputSchema: { type: "object" } }],
    }, "test");
    const spec = commandLaunch(meta, {
      workspace: ws.dir,
      env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: ws.home },
      depsDir: join(ws.dir, ".pml", "deps"),
    });
    const run = await new Deno.Command(spec.command, {
      args: [...spec.args],
      env: { ...spec.env },
      clearEnv: true,
      cwd: spec.cwd,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const out = new TextDecoder().decode(run.stdout);
    assert(out.includes("uid="), out + new TextDecoder().decode(run.stderr));
    assertEquals(breaches(out), [], out);
    console.error(
      `attack secrets_read + identity (dependency): ${paths.length + 5} attempts, none got through`,
    );
  } finally {
    others.dispose();
  }
});
