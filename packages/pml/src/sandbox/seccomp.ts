/**
 * The seccomp filter of the OS sandbox (as Anthropic's sandbox-runtime does): `socket(AF_UNIX, …)`
 * fails with `EPERM`, so no process of the sandbox can open a new unix socket and connect to one
 * it can see (a Docker or IDE socket in the workspace or a read grant, an agent socket). Socket
 * pairs (`socketpair`, what runtimes use for their children's stdio) stay allowed. A classic BPF
 * program, assembled here and handed to bubblewrap (`--seccomp FD`), which installs it with
 * `no_new_privs` before the sandbox's first process starts; every process below inherits it.
 *
 * Syscalls of another ABI than the machine's own (32-bit x86 `int 0x80`, whose `socketcall`
 * multiplexes `socket`; x32) kill the process: nothing in a sandbox needs them.
 *
 * @module
 */
import { join } from "node:path";

/** Per architecture: its `AUDIT_ARCH_*` value and the number of `socket(2)`. */
const ARCHES: Record<string, { audit: number; socket: number; x32?: boolean }> = {
  x86_64: { audit: 0xc000003e, socket: 41, x32: true },
  aarch64: { audit: 0xc00000b7, socket: 198 },
};

const AF_UNIX = 1;
const EPERM = 1;

// Classic BPF opcodes and seccomp return values.
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JGE_K = 0x35;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const RET_KILL_PROCESS = 0x80000000;

/** `struct seccomp_data` offsets: syscall number, arch, first argument (low 32 bits, LE). */
const NR = 0;
const ARCH = 4;
const ARG0 = 16;

type Insn = [code: number, jt: number, jf: number, k: number];

/**
 * The filter for `arch` (Deno's `Deno.build.arch`), as bytes of `struct sock_filter[]`, or
 * `undefined` for an architecture it does not know (the sandbox then runs without it, and
 * `pml status` says so).
 */
export function unixSocketFilter(arch: string = Deno.build.arch): Uint8Array | undefined {
  const a = ARCHES[arch];
  if (!a) return undefined;
  // Jump offsets count the instructions to skip after the current one.
  const program: Insn[] = [
    [LD_W_ABS, 0, 0, ARCH],
    [JEQ_K, 0, a.x32 ? 7 : 6, a.audit], // another ABI → kill
    [LD_W_ABS, 0, 0, NR],
    ...(a.x32 ? [[JGE_K, 4, 0, 0x40000000] as Insn] : []), // x32 → refuse
    [JEQ_K, 0, 2, a.socket], // not socket() → allow
    [LD_W_ABS, 0, 0, ARG0],
    [JEQ_K, 1, 0, AF_UNIX], // AF_UNIX → refuse
    [RET_K, 0, 0, RET_ALLOW],
    [RET_K, 0, 0, RET_ERRNO | EPERM],
    [RET_K, 0, 0, RET_KILL_PROCESS],
  ];
  const bytes = new Uint8Array(program.length * 8);
  const view = new DataView(bytes.buffer);
  program.forEach(([code, jt, jf, k], i) => {
    view.setUint16(i * 8, code, true);
    view.setUint8(i * 8 + 2, jt);
    view.setUint8(i * 8 + 3, jf);
    view.setUint32(i * 8 + 4, k, true);
  });
  return bytes;
}

let written: string | undefined;

/**
 * A file holding {@link unixSocketFilter}, for the shell that starts bubblewrap to open on a
 * descriptor: one per user and filter, `/tmp/pml-seccomp-<uid>/<arch>.bpf`, in a folder only that
 * user may use (checked: owned by this uid, mode 0700, not a link; else a fresh private folder),
 * written once and then reused by every `pml` (nothing to clean up). Its content is checked before
 * use and rewritten when it differs. `undefined` when there is no filter for this architecture.
 */
export function unixSocketFilterFile(): string | undefined {
  if (written) return written;
  const filter = unixSocketFilter();
  if (!filter) return undefined;
  // Linux only (bubblewrap): its shared temporary folder.
  let dir = join("/tmp", `pml-seccomp-${Deno.uid() ?? "user"}`);
  try {
    Deno.mkdirSync(dir, { mode: 0o700 });
  } catch { /* exists: checked below */ }
  if (!privateDir(dir)) dir = Deno.makeTempDirSync({ prefix: "pml-seccomp-" });
  const path = join(dir, `${Deno.build.arch}.bpf`);
  if (!sameBytes(path, filter)) {
    const tmp = `${path}.${Deno.pid}`;
    Deno.writeFileSync(tmp, filter, { mode: 0o400 });
    Deno.renameSync(tmp, path);
  }
  return written = path;
}

/** Whether `dir` is a real folder of this user that nobody else may enter. */
function privateDir(dir: string): boolean {
  try {
    const info = Deno.lstatSync(dir);
    return info.isDirectory && info.uid === Deno.uid() && (info.mode! & 0o077) === 0;
  } catch {
    return false;
  }
}

function sameBytes(path: string, bytes: Uint8Array): boolean {
  try {
    const have = Deno.readFileSync(path);
    return have.length === bytes.length && have.every((b, i) => b === bytes[i]);
  } catch {
    return false;
  }
}
