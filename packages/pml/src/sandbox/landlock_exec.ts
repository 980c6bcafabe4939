/**
 * The launcher of the Landlock wall (`landlock.ts`): run by Deno with every permission (it calls
 * the C library through FFI, which is all of them anyway), it restricts itself and then replaces
 * itself (`execve`) with the sandbox's command, which keeps every restriction:
 *
 * 1. rlimits: tasks (`RLIMIT_NPROC`, counted per uid on the host: the uid's tasks now plus the
 *    sandbox's allowance) and the largest file (`RLIMIT_FSIZE`);
 * 2. `no_new_privs`; as root, every capability dropped for good (bounding set, securebits), the
 *    uid staying 0 for the owner checks of the user's files;
 * 3. the Landlock ruleset of its {@link LaunchPlan}, with `connect` to the proxy's TCP ports
 *    (read from the proxy's folder) when it has network grants;
 * 4. the seccomp filter of `seccomp.ts` `landlockFilter`;
 * 5. the parent-death signal (SIGTERM to the sandbox's init, which then kills every process of
 *    the sandbox) and child-subreaper (what a command detaches stays below the init);
 * 6. every descriptor above the channel marked close-on-exec.
 *
 * Any failure before `execve` ends it with exit code 126 and a line on stderr: the command never
 * runs with less than its plan.
 *
 * Usage: `deno run -A landlock_exec.ts PLAN_JSON COMMAND ARGS…`
 *
 * @module
 */
import { libcPath } from "./libc.ts";
import {
  type LandlockPlan,
  NET,
  SYS_LANDLOCK_ADD_RULE,
  SYS_LANDLOCK_CREATE_RULESET,
  SYS_LANDLOCK_RESTRICT_SELF,
} from "./landlock.ts";
import { landlockFilter } from "./seccomp.ts";
import { HTTP_PROXY_PORT, SOCKS_PROXY_PORT } from "./net_bridge.ts";

/** Everything the launcher applies, as data (`os_sandbox.ts` `landlockCommand` makes it). */
export interface LaunchPlan {
  readonly landlock: LandlockPlan;
  /** The proxy's folder: its `ports` file names the HTTP and SOCKS ports to allow. */
  readonly netDir?: string;
  /** `socket(AF_UNIX)` allowed (the policy grants sockets). */
  readonly unix: boolean;
  readonly tasks: number;
  readonly fileMb: number;
  /** The first descriptor not to pass on (3, or 5 with the `fds` channel). */
  readonly firstClosedFd: number;
}

/** The proxy's ports as `net_proxy.ts` writes them: `HTTP SOCKS`. */
export const PORTS_FILE = "ports";

const O_PATH = 0o10000000;
const O_CLOEXEC = 0o2000000;
const PR_SET_PDEATHSIG = 1;
const PR_CAPBSET_DROP = 24;
const PR_SET_SECUREBITS = 28;
const PR_SET_SECCOMP = 22;
const SECCOMP_MODE_FILTER = 2;
const PR_SET_CHILD_SUBREAPER = 36;
const PR_SET_NO_NEW_PRIVS = 38;
const PR_CAP_AMBIENT = 47;
const PR_CAP_AMBIENT_CLEAR_ALL = 4;
/** NOROOT, NO_SETUID_FIXUP and KEEP_CAPS (off), each locked. */
const SECUREBITS_LOCKED = 0x2f;
const RLIMIT_FSIZE = 1;
const RLIMIT_NPROC = 6;
const SIGTERM = 15;
const SYS_CLOSE_RANGE = 436;
const CLOSE_RANGE_CLOEXEC = 1 << 2;
const LANDLOCK_RULE_PATH_BENEATH = 1;
const LANDLOCK_RULE_NET_PORT = 2;
const MIB = 1024 * 1024;

const encoder = new TextEncoder();

function cString(text: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(text + "\0") as Uint8Array<ArrayBuffer>;
}

function fail(what: string): never {
  console.error(`pml sandbox (Landlock): cannot ${what}; the command was not started`);
  Deno.exit(126);
}

/** Tasks (threads included) of real uid `uid` on the machine now, from `/proc`. */
function tasksOf(uid: number): number {
  let count = 0;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const status = Deno.readTextFileSync(`/proc/${entry.name}/status`);
      const real = /^Uid:\s+(\d+)/m.exec(status)?.[1];
      if (Number(real) === uid) count += Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? 1);
    } catch { /* gone */ }
  }
  return count;
}

/** The environment with the proxy variables pointed at the proxy's real ports. */
function environment(ports: [number, number] | undefined): string[] {
  const env = Deno.env.toObject();
  // The launcher ran with `pml`'s Deno cache (compiled once); the command gets its own back.
  if ("PML_COMMAND_DENO_DIR" in env) {
    if (env.PML_COMMAND_DENO_DIR) env.DENO_DIR = env.PML_COMMAND_DENO_DIR;
    else delete env.DENO_DIR;
    delete env.PML_COMMAND_DENO_DIR;
  }
  return Object.entries(env).map(([name, value]) => {
    const v = ports
      ? value.replace(`127.0.0.1:${HTTP_PROXY_PORT}`, `127.0.0.1:${ports[0]}`)
        .replace(`127.0.0.1:${SOCKS_PROXY_PORT}`, `127.0.0.1:${ports[1]}`)
      : value;
    return `${name}=${v}`;
  });
}

/** A NULL-terminated array of pointers to `strings` (the buffers are kept in `keep`). */
function pointers(strings: readonly string[], keep: Uint8Array[]): BigUint64Array<ArrayBuffer> {
  const out = new BigUint64Array(strings.length + 1);
  strings.forEach((text, i) => {
    const bytes = cString(text);
    keep.push(bytes);
    out[i] = BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(bytes)));
  });
  return out;
}

/** `command[0]` as `execve` needs it: absolute, or found on `PATH`. */
function resolve(program: string): string {
  if (program.includes("/")) return program;
  for (const dir of (Deno.env.get("PATH") ?? "/usr/bin:/bin").split(":")) {
    try {
      const path = `${dir}/${program}`;
      if (Deno.statSync(path).isFile) return path;
    } catch { /* next */ }
  }
  return program;
}

function main(args: readonly string[]): void {
  const [planText, ...command] = args;
  if (!planText || command.length === 0) fail("read its plan (usage: PLAN_JSON COMMAND…)");
  const plan = JSON.parse(planText) as LaunchPlan;
  const libc = libcPath() ?? fail("find the C library");
  const lib = Deno.dlopen(libc, {
    syscall: { parameters: ["i64", "i64", "i64", "i64", "i64", "i64"], result: "i64" },
    prctl: { parameters: ["i32", "u64", "u64", "u64", "u64"], result: "i32" },
    open: { parameters: ["buffer", "i32", "i32"], result: "i32" },
    close: { parameters: ["i32"], result: "i32" },
    setrlimit: { parameters: ["i32", "buffer"], result: "i32" },
    capset: { parameters: ["buffer", "buffer"], result: "i32" },
    execve: { parameters: ["buffer", "buffer", "buffer"], result: "i32" },
  });
  const { syscall, prctl } = lib.symbols;
  const ptr = (b: Uint8Array<ArrayBuffer> | BigUint64Array<ArrayBuffer>) =>
    BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(b)));

  let ports: [number, number] | undefined;
  if (plan.netDir) {
    const text = Deno.readTextFileSync(`${plan.netDir}/${PORTS_FILE}`).trim().split(/\s+/);
    ports = [Number(text[0]), Number(text[1])];
  }

  // 1. rlimits.
  const uid = Deno.uid() ?? 0;
  const limit = (resource: number, value: bigint, what: string) => {
    const rl = new BigUint64Array([value, value]);
    if (lib.symbols.setrlimit(resource, new Uint8Array(rl.buffer)) !== 0) fail(`set ${what}`);
  };
  limit(RLIMIT_FSIZE, BigInt(plan.fileMb * MIB), "RLIMIT_FSIZE");
  // The kernel counts it per uid on the whole host, and ignores it for root (a control group
  // holds the tasks then): as root it is set as bubblewrap sets it, for what it says.
  const tasks = uid === 0 ? plan.tasks : tasksOf(uid) + plan.tasks;
  limit(RLIMIT_NPROC, BigInt(tasks), "RLIMIT_NPROC");

  // 2. no new privileges; as root, no capability at all.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1n, 0n, 0n, 0n) !== 0) fail("set no_new_privs");
  if (uid === 0) {
    for (let cap = 0n; cap < 64n; cap++) prctl(PR_CAPBSET_DROP, cap, 0n, 0n, 0n);
    if (prctl(PR_SET_SECUREBITS, BigInt(SECUREBITS_LOCKED), 0n, 0n, 0n) !== 0) {
      fail("lock the securebits");
    }
    prctl(PR_CAP_AMBIENT, BigInt(PR_CAP_AMBIENT_CLEAR_ALL), 0n, 0n, 0n);
    const header = new Uint32Array([0x20080522, 0]); // _LINUX_CAPABILITY_VERSION_3, this process
    const data = new Uint32Array(6); // effective, permitted, inheritable × 2: all empty
    if (
      lib.symbols.capset(new Uint8Array(header.buffer), new Uint8Array(data.buffer)) !== 0
    ) fail("drop the capabilities");
  }

  // 3. Landlock.
  const ll = plan.landlock;
  const attr = new BigUint64Array([BigInt(ll.handledFs), BigInt(ll.handledNet), BigInt(ll.scoped)]);
  const attrSize = ll.abi >= 6 ? 24 : ll.abi >= 4 ? 16 : 8;
  const ruleset = Number(
    syscall(BigInt(SYS_LANDLOCK_CREATE_RULESET), ptr(attr), BigInt(attrSize), 0n, 0n, 0n),
  );
  if (ruleset < 0) fail(`create a Landlock ruleset (ABI ${ll.abi})`);
  const beneath = new Uint8Array(12);
  const view = new DataView(beneath.buffer);
  for (const rule of ll.rules) {
    const fd = lib.symbols.open(cString(rule.path), O_PATH | O_CLOEXEC, 0);
    if (fd < 0) continue; // gone since the plan was made: nothing to allow
    view.setBigUint64(0, BigInt(rule.access), true);
    view.setInt32(8, fd, true);
    // A rule the kernel refuses allows nothing more: the sandbox only loses that path.
    syscall(
      BigInt(SYS_LANDLOCK_ADD_RULE),
      BigInt(ruleset),
      BigInt(LANDLOCK_RULE_PATH_BENEATH),
      ptr(beneath),
      0n,
      0n,
    );
    lib.symbols.close(fd);
  }
  if (ports && ll.handledNet) {
    for (const port of ports) {
      const net = new BigUint64Array([BigInt(NET.CONNECT_TCP), BigInt(port)]);
      const added = syscall(
        BigInt(SYS_LANDLOCK_ADD_RULE),
        BigInt(ruleset),
        BigInt(LANDLOCK_RULE_NET_PORT),
        ptr(net),
        0n,
        0n,
      );
      if (added !== 0n) fail(`allow the proxy's port ${port}`);
    }
  }
  if (syscall(BigInt(SYS_LANDLOCK_RESTRICT_SELF), BigInt(ruleset), 0n, 0n, 0n, 0n) !== 0n) {
    fail("apply the Landlock ruleset");
  }
  lib.symbols.close(ruleset);

  // 4. seccomp.
  const filter = landlockFilter({ unix: plan.unix, tcp: ll.handledNet !== 0 || !!ports });
  if (!filter) fail(`filter syscalls on ${Deno.build.arch}`);
  const prog = new Uint8Array(16);
  new DataView(prog.buffer).setUint16(0, filter.length / 8, true);
  new DataView(prog.buffer).setBigUint64(8, ptr(filter as Uint8Array<ArrayBuffer>), true);
  if (prctl(PR_SET_SECCOMP, BigInt(SECCOMP_MODE_FILTER), ptr(prog), 0n, 0n) !== 0) {
    fail("install the seccomp filter");
  }

  // 5. the sandbox's init: told when pml goes, and the parent of what commands detach.
  if (prctl(PR_SET_PDEATHSIG, BigInt(SIGTERM), 0n, 0n, 0n) !== 0) {
    fail("set the parent-death signal");
  }
  if (prctl(PR_SET_CHILD_SUBREAPER, 1n, 0n, 0n, 0n) !== 0) fail("become a subreaper");

  // 6. descriptors, then the command.
  syscall(
    BigInt(SYS_CLOSE_RANGE),
    BigInt(plan.firstClosedFd),
    0xffffffffn,
    BigInt(CLOSE_RANGE_CLOEXEC),
    0n,
    0n,
  );
  const keep: Uint8Array[] = [];
  const program = resolve(command[0]);
  const argv = pointers(command, keep);
  const envp = pointers(environment(ports), keep);
  lib.symbols.execve(
    cString(program),
    new Uint8Array(argv.buffer),
    new Uint8Array(envp.buffer),
  );
  fail(`run "${program}"`);
}

if (import.meta.main) main(Deno.args);
