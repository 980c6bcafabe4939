/**
 * Runs a command (the attack suites, `pml`) on this machine with bubblewrap made unusable in one of
 * the ways users meet, so that PML falls back to the Landlock wall by itself (no
 * `PML_SANDBOX_WALL`):
 *
 * - `missing`: bubblewrap not installed: on `PATH`, the folder holding `bwrap` is replaced by a
 *   folder of links to its other programs;
 * - `seccomp`: namespaces refused by a seccomp filter as Docker's default profile refuses them
 *   (`clone` with a namespace flag, `unshare`, `setns`, `mount`, `umount2`, `pivot_root` fail with
 *   `EPERM`; `clone3` with `ENOSYS`, so that the C library falls back to `clone`), installed on
 *   every thread of this process and inherited by the command;
 * - `userns-off`: unprivileged user namespaces off for a non-root user: the command runs as uid
 *   1000 without capabilities (`setpriv`), and creating a user namespace fails with `ENOSPC`, what
 *   the kernel answers when `user.max_user_namespaces` is 0. That sysctl is not set for real: it is
 *   global, and this machine is shared with suites that need bubblewrap; a user namespace of its own
 *   cannot lower it either (writing it from one is refused). The filter gives the same answer to the
 *   same calls, for this command only. Needs root (to become uid 1000).
 *
 * Usage: `deno run -A tests/security/bwrap_unusable.ts WAY COMMAND ARGS…`
 *
 * @module
 */
import { join } from "node:path";
import { bpf, type Step } from "../../packages/pml/src/sandbox/seccomp.ts";
import { libcPath } from "../../packages/pml/src/sandbox/libc.ts";

type Way = "missing" | "seccomp" | "userns-off";

const NRS: Record<string, Record<string, number>> = {
  x86_64: {
    clone: 56,
    clone3: 435,
    unshare: 272,
    setns: 308,
    mount: 165,
    umount2: 166,
    pivot_root: 155,
  },
  aarch64: {
    clone: 220,
    clone3: 435,
    unshare: 97,
    setns: 268,
    mount: 40,
    umount2: 39,
    pivot_root: 41,
  },
};
const AUDIT: Record<string, number> = { x86_64: 0xc000003e, aarch64: 0xc00000b7 };
const CLONE_NEWUSER = 0x10000000;
/** Every namespace flag of `clone` (Docker's profile refuses them all). */
const CLONE_NAMESPACES = 0x7e020000;
const EPERM = 1;
const ENOSPC = 28;
const ENOSYS = 38;

/** The filter of `way`: which calls fail, and with which error. */
function filter(way: "seccomp" | "userns-off"): Uint8Array {
  const nr = NRS[Deno.build.arch];
  const ld = (k: number): Step => ({ insn: [0x20, 0, 0, k] });
  const ret = (k: number): Step => ({ insn: [0x06, 0, 0, k] });
  const errno = (e: number) => ret(0x00050000 | e);
  const flags = way === "seccomp" ? CLONE_NAMESPACES : CLONE_NEWUSER;
  const refusal = way === "seccomp" ? EPERM : ENOSPC;
  return bpf([
    ld(4),
    { insn: [0x15, 1, 0, AUDIT[Deno.build.arch]] },
    ret(0x7fff0000),
    ld(0),
    { insn: [0x15, "clone3", 0, nr.clone3] },
    { insn: [0x15, "flags", 0, nr.clone] },
    { insn: [0x15, way === "seccomp" ? "refuse" : "flags", 0, nr.unshare] },
    ...(way === "seccomp"
      ? ["setns", "mount", "umount2", "pivot_root"].map((n): Step => ({
        insn: [0x15, "refuse", 0, nr[n]],
      }))
      : []),
    ret(0x7fff0000),
    { label: "flags" },
    ld(16),
    { insn: [0x45, "refuse", 0, flags] },
    ret(0x7fff0000),
    { label: "clone3" },
    errno(ENOSYS),
    { label: "refuse" },
    errno(refusal),
  ]);
}

/** Installs `program` on every thread of this process (`SECCOMP_FILTER_FLAG_TSYNC`). */
function install(program: Uint8Array): void {
  const lib = Deno.dlopen(libcPath()!, {
    prctl: { parameters: ["i32", "u64", "u64", "u64", "u64"], result: "i32" },
    syscall: { parameters: ["i64", "i64", "i64", "i64"], result: "i64" },
  });
  const ptr = (b: Uint8Array<ArrayBuffer>) =>
    BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(b)));
  const prog = new Uint8Array(16);
  new DataView(prog.buffer).setUint16(0, program.length / 8, true);
  new DataView(prog.buffer).setBigUint64(8, ptr(program as Uint8Array<ArrayBuffer>), true);
  if (lib.symbols.prctl(38, 1n, 0n, 0n, 0n) !== 0) throw new Error("no_new_privs refused");
  const SYS_SECCOMP = Deno.build.arch === "x86_64" ? 317n : 277n;
  const done = lib.symbols.syscall(SYS_SECCOMP, 1n, 1n, ptr(prog)); // SET_MODE_FILTER, TSYNC
  if (done !== 0n) throw new Error(`seccomp refused (${done})`);
}

/**
 * `path` without `bwrap`: each folder holding it is replaced by a folder of links to its other
 * programs (the other folders stay as they are, so a toolchain's own folder stays on `PATH`).
 */
function pathWithoutBwrap(path: string, made: string[]): string {
  return path.split(":").map((from) => {
    try {
      Deno.statSync(join(from, "bwrap"));
    } catch {
      return from;
    }
    const dir = Deno.makeTempDirSync({ prefix: "pml-no-bwrap-" });
    made.push(dir);
    for (const entry of Deno.readDirSync(from)) {
      if (entry.name !== "bwrap") Deno.symlinkSync(join(from, entry.name), join(dir, entry.name));
    }
    return dir;
  }).join(":");
}

async function main([way, ...command]: string[]): Promise<number> {
  if (!["missing", "seccomp", "userns-off"].includes(way) || command.length === 0) {
    console.error("usage: bwrap_unusable.ts missing|seccomp|userns-off COMMAND ARGS…");
    return 2;
  }
  const env = Deno.env.toObject();
  let argv = command;
  const made: string[] = [];
  if ((way as Way) === "missing") env.PATH = pathWithoutBwrap(env.PATH ?? "/usr/bin:/bin", made);
  else install(filter(way as "seccomp" | "userns-off"));
  if ((way as Way) === "userns-off") {
    // Its own writable places: the Deno caches and a home (the checkout is only readable).
    const own = Deno.makeTempDirSync({ prefix: "pml-uid1000-" });
    made.push(own);
    for (const sub of ["home", "deno", "pml-deno"]) Deno.mkdirSync(join(own, sub));
    Deno.chmodSync(own, 0o777);
    await new Deno.Command("chown", { args: ["-R", "1000:1000", own] }).output();
    Object.assign(env, {
      HOME: join(own, "home"),
      DENO_DIR: join(own, "deno"),
      PML_DENO_DIR: join(own, "pml-deno"),
    });
    argv = ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups", "--", ...command];
  }
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    env,
    clearEnv: true,
    stdin: "inherit",
  }).spawn();
  const { code } = await child.status;
  for (const dir of made) Deno.removeSync(dir, { recursive: true });
  return code;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
