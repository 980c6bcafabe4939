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
  return toBytes(program);
}

/** Syscall numbers the Landlock wall's filter looks at, per architecture. */
const LANDLOCK_NRS: Record<string, Record<string, number>> = {
  x86_64: {
    socket: 41,
    sendto: 44,
    sendmsg: 46,
    sendmmsg: 307,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    add_key: 248,
    request_key: 249,
    keyctl: 250,
  },
  aarch64: {
    socket: 198,
    sendto: 206,
    sendmsg: 211,
    sendmmsg: 269,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    add_key: 217,
    request_key: 218,
    keyctl: 219,
  },
};

const AF_INET = 2;
const AF_INET6 = 10;
const SOCK_STREAM = 1;
const MSG_FASTOPEN = 0x20000000;
const ALU_AND_K = 0x54;
const JSET_K = 0x45;

/** One instruction whose jumps name labels, resolved by {@link bpf}. */
export type Step = { insn: [number, string | number, string | number, number] } | {
  label: string;
};

/** A classic BPF program, as bytes of `struct sock_filter[]`, from labelled steps. */
export function bpf(steps: readonly Step[]): Uint8Array {
  return toBytes(assemble(steps));
}

/** Classic BPF with labelled jumps (`0` or a number: that many instructions ahead). */
function assemble(steps: readonly Step[]): Insn[] {
  const at = new Map<string, number>();
  let n = 0;
  for (const step of steps) {
    if ("label" in step) at.set(step.label, n);
    else n++;
  }
  const out: Insn[] = [];
  for (const step of steps) {
    if ("label" in step) continue;
    const [code, jt, jf, k] = step.insn;
    const rel = (j: string | number) => typeof j === "number" ? j : at.get(j)! - out.length - 1;
    out.push([code, rel(jt), rel(jf), k]);
  }
  return out;
}

function toBytes(program: readonly Insn[]): Uint8Array {
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

/**
 * The seccomp filter of the Landlock wall, where the sandbox shares the host's network (no
 * namespace): `socket()` succeeds only for TCP (`AF_INET`/`AF_INET6` streams, which Landlock then
 * lets connect only to the proxy's ports) and, when `unix` is set, `AF_UNIX` (the sockets the
 * policy grants); UDP, raw, netlink and every other family fail with `EPERM`. Also refused: TCP
 * Fast Open sends (a connect that does not go through `connect()`), `io_uring` (whose operations
 * open sockets without `socket()`) and the kernel keyrings. Another ABI kills the process; x32
 * fails. `undefined` for an architecture it does not know.
 */
export function landlockFilter(
  opts: { unix: boolean; tcp: boolean },
  arch: string = Deno.build.arch,
): Uint8Array | undefined {
  const a = ARCHES[arch];
  const nr = LANDLOCK_NRS[arch];
  if (!a || !nr) return undefined;
  const ld = (k: number): Step => ({ insn: [LD_W_ABS, 0, 0, k] });
  const ifEq = (k: number, then: string): Step => ({ insn: [JEQ_K, then, 0, k] });
  const ret = (k: number): Step => ({ insn: [RET_K, 0, 0, k] });
  const refused = ["io_uring_setup", "io_uring_enter", "io_uring_register", "add_key"]
    .concat(["request_key", "keyctl"]);
  return bpf([
    ld(ARCH),
    { insn: [JEQ_K, 0, "kill", a.audit] },
    ld(NR),
    ...(a.x32 ? [{ insn: [JGE_K, "refuse", 0, 0x40000000] } as Step] : []),
    ifEq(nr.socket, "socket"),
    ifEq(nr.sendto, "flags3"),
    ifEq(nr.sendmmsg, "flags3"),
    ifEq(nr.sendmsg, "flags2"),
    ...refused.map((name) => ifEq(nr[name], "refuse")),
    ret(RET_ALLOW),
    { label: "socket" },
    ld(ARG0),
    ifEq(AF_UNIX, opts.unix ? "allow" : "refuse"),
    ifEq(AF_INET, "stream"),
    ifEq(AF_INET6, "stream"),
    ret(RET_ERRNO | EPERM),
    { label: "stream" },
    ld(ARG0 + 8),
    { insn: [ALU_AND_K, 0, 0, 0xf] },
    { insn: [JEQ_K, opts.tcp ? "allow" : "refuse", "refuse", SOCK_STREAM] },
    { label: "flags3" },
    ld(ARG0 + 24),
    { insn: [JSET_K, "refuse", "allow", MSG_FASTOPEN] },
    { label: "flags2" },
    ld(ARG0 + 16),
    { insn: [JSET_K, "refuse", "allow", MSG_FASTOPEN] },
    { label: "allow" },
    ret(RET_ALLOW),
    { label: "refuse" },
    ret(RET_ERRNO | EPERM),
    { label: "kill" },
    ret(RET_KILL_PROCESS),
  ]);
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
