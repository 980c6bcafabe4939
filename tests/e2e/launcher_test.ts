/**
 * The launchers `bin/pml`, `bin/pml-server` and the npm package's `npm/pml` find their installation
 * through symlinks (absolute, relative, chained, invoked by a bare name) and run the program in the
 * caller's folder.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { spawnServe } from "./_serve.ts";
import { connectStdio } from "./_spawn.ts";

const ROOT = join(import.meta.dirname!, "..", "..");

async function run(command: string, args: string[], cwd: string, env: Record<string, string>) {
  const out = await new Deno.Command(command, {
    args,
    cwd,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** A workspace (its own folder, with a `.git` marker) and a folder of links to the launchers. */
function setUp() {
  const tmp = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-launcher-" }));
  const ws = join(tmp, "project");
  Deno.mkdirSync(join(ws, ".git"), { recursive: true });
  Deno.mkdirSync(join(tmp, "home"));
  Deno.mkdirSync(join(tmp, "links", "deeper"), { recursive: true });
  // links/pml → bin/pml (absolute); links/deeper/pml → ../pml (relative, through the first).
  Deno.symlinkSync(join(ROOT, "bin", "pml"), join(tmp, "links", "pml"));
  Deno.symlinkSync("../pml", join(tmp, "links", "deeper", "pml"));
  Deno.symlinkSync(join(ROOT, "bin", "pml-server"), join(tmp, "links", "pml-server"));
  return { tmp, ws, home: join(tmp, "home"), links: join(tmp, "links") };
}

Deno.test("launcher: bin/pml through an absolute link and a chain of relative links serves the caller's folder", async () => {
  const t = setUp();
  try {
    for (
      const bin of [join(ROOT, "bin", "pml"), join(t.links, "pml"), join(t.links, "deeper", "pml")]
    ) {
      const r = await run(bin, ["status"], t.ws, { HOME: t.home });
      assertEquals(r.code, 0, `${bin}: ${r.stderr}`);
      assertStringIncludes(r.stdout, `workspace   ${t.ws} (marker)`, bin);
    }
  } finally {
    Deno.removeSync(t.tmp, { recursive: true });
  }
});

Deno.test("launcher: bin/pml run by a bare name from its own folder, and pml-server through a link", async () => {
  const t = setUp();
  try {
    const bare = await run("bash", ["pml", "--version"], join(t.links, "deeper"), { HOME: t.home });
    assertEquals(bare.code, 0, bare.stderr);
    assertStringIncludes(bare.stdout, "pml ");
    const server = await run(join(t.links, "pml-server"), ["--help"], t.ws, { HOME: t.home });
    assertEquals(server.code, 0, server.stderr);
    assertStringIncludes(server.stdout, "Usage: pml-server");
  } finally {
    Deno.removeSync(t.tmp, { recursive: true });
  }
});

Deno.test("launcher: npm/pml without the Deno it depends on says so and exits 127", async () => {
  const t = setUp();
  try {
    // A copy of the npm launcher in a package folder with no node_modules above it.
    const pkg = join(t.tmp, "pkg");
    Deno.mkdirSync(join(pkg, "bin"), { recursive: true });
    Deno.copyFileSync(join(ROOT, "packages", "pml", "npm", "pml"), join(pkg, "bin", "pml"));
    Deno.chmodSync(join(pkg, "bin", "pml"), 0o755);
    Deno.symlinkSync("../pkg/bin/pml", join(t.links, "npm-pml"));
    const r = await run(join(t.links, "npm-pml"), ["--version"], t.ws, { HOME: t.home });
    assertEquals(r.code, 127);
    assertStringIncludes(r.stderr, `is not installed beside ${pkg}`);
  } finally {
    Deno.removeSync(t.tmp, { recursive: true });
  }
});

/** The `--v8-flags=…` a running gateway was started with (the launcher `exec`s Deno: same pid). */
function v8Flags(pid: number): string {
  const args = Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0");
  return args.find((a) => a.startsWith("--v8-flags="))?.slice("--v8-flags=".length) ?? "";
}

Deno.test("launcher: pml stdio runs V8 sized for one agent, pml serve V8's defaults for many sessions", async () => {
  await using ws = tempWorkspace();
  {
    await using stdio = await connectStdio(ws);
    assertEquals(
      v8Flags(stdio.pid).split(",").sort(),
      ["--expose-gc", "--max-semi-space-size=4"],
    );
  }
  await using serve = await spawnServe(ws);
  assertEquals(v8Flags(serve.child.pid), "--expose-gc");
});

Deno.test("launcher: pml serve and pml stdio keep Deno's compiled code apart (their V8 flags differ)", async () => {
  const t = setUp();
  const cache = join(t.tmp, "cache");
  try {
    // V8 rejects code cached under other flags: over one cache each command recompiled it for the
    // other. `status` runs with the stdio flags, `serve --help` with serve's.
    for (const args of [["status"], ["serve", "--help"]]) {
      const r = await run(join(ROOT, "bin", "pml"), args, t.ws, {
        HOME: t.home,
        PML_DENO_DIR: cache,
      });
      assertEquals(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
    }
    const dirs = [...Deno.readDirSync(cache)].map((e) => e.name).sort();
    // Named after the flags: a change of either flag set starts a cache of its own.
    assertEquals(dirs, ["expose-gc", "max-semi-space-size=4+expose-gc"]);
    for (const dir of dirs) {
      assert([...Deno.readDirSync(join(cache, dir))].length > 0, `nothing cached in ${dir}`);
    }
  } finally {
    Deno.removeSync(t.tmp, { recursive: true });
  }
});
