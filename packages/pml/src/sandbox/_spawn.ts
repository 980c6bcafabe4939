/**
 * How a sandbox process is started: behind which OS wall (when its spec asks for one and the
 * machine has one), with which private folders and environment, its network proxy and control
 * group; and what is undone once it has ended. `SandboxProcess` then speaks the protocol with it.
 *
 * @module
 */
import { unixSocketFilterFile } from "./seccomp.ts";
import { libcPath } from "./libc.ts";
import { SANDBOX_CACHE_HOME, SANDBOX_DENO_DIR, SANDBOX_HOME, wallCommand } from "./os_sandbox.ts";
import { detectOsSandbox, type OsSandboxStatus } from "./detect_os_sandbox.ts";
import { NetProxy } from "./net_proxy.ts";
import { HTTP_PROXY_ENV, PROXY_ENV, proxyEnvOnPorts } from "./net_bridge.ts";
import { createGroup, joinThenRun } from "./cgroup.ts";
import { sandboxFlags, type SandboxSpec } from "./sandbox_spec.ts";

/**
 * The OS wall a sandbox runs behind: bubblewrap (its pid namespace lets strays be found and
 * killed), Landlock (its init is the subreaper of what commands detach) or Seatbelt.
 */
export type SandboxWall = "bubblewrap" | "landlock" | "seatbelt";

/** A started sandbox process, its stdio piped. */
export interface SpawnedSandbox {
  readonly child: Deno.ChildProcess;
  /** The OS wall it runs behind; none where the spec asks for none or the machine has none. */
  readonly wall: SandboxWall | undefined;
  /**
   * Most MiB one call may write to disk: the spec's, else behind Landlock the size its tmpfs
   * mounts would have had (its temp folder and Deno cache are on the host's disk there).
   */
  readonly maxWriteMb: number | undefined;
  /** Once the process has ended: closes its proxy, removes its control group and private folders. */
  cleanUp(): Promise<void>;
}

/**
 * Starts `deno run` with the spec's flags, inside the OS wall its `os` policy asks for where the
 * machine has one. `onRefused` hears each destination (`host:port`) its network proxy refused.
 */
export function spawnSandbox(
  spec: SandboxSpec,
  opts: {
    denoPath?: string;
    /** Injectable for tests; detected once per process by default. */
    osSandbox?: OsSandboxStatus;
    onRefused: (destination: string) => void;
  },
): SpawnedSandbox {
  const deno = opts.denoPath ?? Deno.execPath();
  const os = spec.os ? (opts.osSandbox ?? detectOsSandbox()) : undefined;
  const confined = spec.os && os?.available ? { policy: spec.os, wall: os } : undefined;
  const landlock = confined !== undefined && "landlock" in confined.wall;
  const seatbelt = confined !== undefined && "seatbelt" in confined.wall;
  // Behind Landlock or Seatbelt nothing is mounted: the sandbox's home, temp folder and Deno
  // cache are a private folder of the host's (by its real path: Seatbelt matches real paths),
  // removed when it ends.
  const own = landlock || seatbelt
    ? Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-sandbox-" }))
    : undefined;
  if (own) { for (const sub of ["home", "tmp", "deno"]) Deno.mkdirSync(`${own}/${sub}`); }
  // Deno's update check is a network lookup; a sandbox has no business with the network.
  const env: Record<string, string> = { ...spec.env, DENO_NO_UPDATE_CHECK: "1" };
  if (confined) {
    // Deno's cache is private, unless the spec's is bound in (registry modules need their
    // cached npm imports). The home is the user's where the policy shows it (the toolbox of
    // `shell:exec`: `~/.gitconfig`, toolchains), else an empty private one.
    if (!env.DENO_DIR || !spec.os!.read.includes(env.DENO_DIR)) {
      env.DENO_DIR = own ? `${own}/deno` : SANDBOX_DENO_DIR;
    }
    env.TMPDIR = own ? `${own}/tmp` : "/tmp";
    // Paths the spec puts under the sandbox's /tmp (the caches of `shell:exec`) are in its
    // private temp folder behind Landlock, where /tmp is the host's.
    if (own) {
      // Only those: the user's HOME or PATH may lie under the host's /tmp too.
      for (const [k, v] of Object.entries(env)) {
        if (v === SANDBOX_CACHE_HOME || v.startsWith(`${SANDBOX_CACHE_HOME}/`)) env[k] = own + v;
      }
    }
    if (env.HOME !== undefined && !spec.os!.read.includes(env.HOME)) {
      env.HOME = own ? `${own}/home` : SANDBOX_HOME;
    }
  }
  // Without the OS wall, a sandbox meant to have one and given no Deno cache would use the
  // user's (its `location_data` holds `localStorage` and the Cache API): a private one instead,
  // removed when the process ends.
  const privateDenoDir = !confined && spec.os && env.DENO_DIR === undefined
    ? Deno.makeTempDirSync({ prefix: "pml-sandbox-deno-" })
    : undefined;
  if (privateDenoDir) env.DENO_DIR = privateDenoDir;
  // Granted hosts are reached through a proxy of this process, the only way out of the
  // sandbox's network namespace (without the OS wall, Deno's --allow-net alone holds).
  const proxy = confined && confined.policy.net.length > 0
    ? new NetProxy(confined.policy.net, {
      tcp: landlock || seatbelt,
      onEvent: (e) => {
        if (!e.allowed) opts.onRefused(`${e.host}:${e.port}`);
      },
    })
    : undefined;
  // Programs a shell starts get SOCKS5 too; Deno code only HTTP(S) (see HTTP_PROXY_ENV).
  if (proxy) Object.assign(env, spec.run ? PROXY_ENV : HTTP_PROXY_ENV);
  // Behind Seatbelt: straight to the proxy's loopback ports (no bridge, no launcher to do it).
  if (seatbelt && proxy?.ports) Object.assign(env, proxyEnvOnPorts(env, proxy.ports));
  // A sandbox that runs programs keeps its protocol out of their reach (`SandboxChannel`):
  // through `/proc`, which macOS does not have (nor `prctl`, which seals the runner).
  const libc = confined && spec.run && !seatbelt ? libcPath() : undefined;
  const started = confined
    ? wallCommand(
      confined.wall,
      confined.policy,
      spec.cwd,
      [deno, ...sandboxFlags(spec, libc ? { libc } : undefined)],
      {
        denoPath: deno,
        channel: libc ? "fds" : "stdio",
        seccomp: seatbelt ? undefined : unixSocketFilterFile(),
        netDir: proxy?.dir,
        privateDir: own,
        proxyPorts: proxy?.ports,
      },
    )
    : { program: deno, args: sandboxFlags(spec) };
  // Tasks and memory of the whole sandbox in a control group, where `pml` may create one (the
  // only process cap the kernel applies when `pml` runs as root).
  const limits = confined?.policy.limits;
  const group = limits && createGroup({ tasks: limits.tasks, memoryMb: limits.memoryMb });
  const [program, ...args] = group
    ? joinThenRun(group, [started.program, ...started.args])
    : [started.program, ...started.args];
  const child = new Deno.Command(program, {
    args,
    cwd: spec.cwd,
    clearEnv: true,
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  return {
    child,
    wall: confined && (landlock ? "landlock" : seatbelt ? "seatbelt" : "bubblewrap"),
    // Behind Landlock its temp folder and Deno cache (the Cache API, `localStorage`) are on the
    // host's disk, not a sized tmpfs: what one call writes is capped at that size instead.
    maxWriteMb: spec.maxWriteMb ??
      (landlock ? confined!.policy.limits.tmpMb + confined!.policy.limits.shmMb : undefined),
    async cleanUp() {
      proxy?.close();
      await group?.remove();
      for (const dir of [privateDenoDir, own]) {
        if (!dir) continue;
        try {
          Deno.removeSync(dir, { recursive: true });
        } catch { /* already gone */ }
      }
    },
  };
}
