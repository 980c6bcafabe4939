/**
 * How a stdio server is started, as data ({@link LaunchSpec}), the rules every way of starting one
 * shares (the refusal without an OS wall or the note of an unconfined run, the variables it may
 * receive, its metadata's placeholders, what its wall needs beside the command), and the npm
 * package's launch under Deno ({@link denoLaunch}). A declared raw command's is `command_launch.ts`.
 *
 * @module
 */
import { PmlError } from "../errors.ts";
import type { InstalledPackage } from "./installer.ts";
import type { DependencyMeta } from "./metadata.ts";
import { guardedPaths } from "../config/control_files.ts";
import { SANDBOX_DENO_DIR, wallCommand } from "../sandbox/os_sandbox.ts";
import {
  detectOsSandbox,
  type OsSandboxStatus,
  type OsWall,
} from "../sandbox/detect_os_sandbox.ts";
import { proxyDir } from "../sandbox/net_proxy.ts";
import type { OsPolicy } from "../sandbox/policy.ts";
import type { GroupLimits } from "../sandbox/cgroup.ts";
import { HTTP_PROXY_ENV } from "../sandbox/net_bridge.ts";
import { sandboxPolicy } from "../sandbox/policy.ts";

/** How to start a stdio server, as data: tests and `pml status` can inspect every grant. */
export interface LaunchSpec {
  readonly server: string;
  readonly command: string;
  readonly args: readonly string[];
  /** The whole environment of the process (it inherits nothing else). */
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  readonly mode: "deno" | "command";
  /**
   * Set when a `deno` server runs without the OS wall (none here, and `.pml.json` sets
   * `sandbox.unconfined`): why, for the note every result of it carries.
   */
  readonly unconfined?: string;
  /** Runs inside the OS sandbox (`command` is bubblewrap): stopped by killing the sandbox whole. */
  readonly osWall?: boolean;
  /**
   * Behind Landlock (no namespaces): the private folder (`home`, `tmp`, `deno`) to make before the
   * start and remove after the end, and the sandbox is stopped by killing its process tree.
   */
  readonly landlock?: { readonly privateDir: string };
  /**
   * Behind Seatbelt (macOS: no mounts either): the private folder, made and removed the same way;
   * the sandbox is stopped with its process group.
   */
  readonly seatbelt?: { readonly privateDir: string };
  /**
   * The network proxy to start (in `pml`) before the sandbox, with the hosts it lets through and
   * the folder its sockets go to (bound into the sandbox by `args`).
   */
  readonly netProxy?: {
    readonly grants: readonly string[];
    readonly dir: string;
    /** Also on loopback TCP (the Landlock and Seatbelt walls): see `NetProxy`'s `tcp`. */
    readonly tcp?: boolean;
  };
  /** What the user declared (`node /srv/x.mjs`), for messages: not the sandbox's command line. */
  readonly declared?: string;
  /** The control group to start the sandbox in, where `pml` may create one (`cgroup.ts`). */
  readonly group?: GroupLimits;
}

/**
 * Why an npm server cannot start here, or `undefined` when it can: it needs the OS sandbox (its
 * code is a third party's) unless `.pml.json` accepts running it unconfined.
 */
export function osWallRefusal(
  server: string,
  os: OsSandboxStatus,
  unconfined: boolean,
): string | undefined {
  if (os.available || unconfined) return undefined;
  return `"${server}" was not started: a stdio dependency runs inside the OS sandbox, and this ` +
    `machine has none: ${os.reason}. Install it, or accept running it unconfined with ` +
    `"sandbox": {"unconfined": true} in .pml.json.`;
}

/** Throws the {@link osWallRefusal} as a `NO_OS_SANDBOX` error when there is one. */
export function refuseWithoutOsWall(
  server: string,
  os: OsSandboxStatus,
  unconfined: boolean,
): void {
  const refusal = osWallRefusal(server, os, unconfined);
  if (refusal) throw new PmlError("NO_OS_SANDBOX", refusal, { details: { server } });
}

/** The line every result of an unconfined server starts with. */
export function unconfinedNote(reason: string): string {
  return `[pml: ran UNCONFINED (${reason}); ".pml.json" sandbox.unconfined is set]\n`;
}

/** Variables never passed to a dependency, whatever it declares. */
const NEVER = new Set(["PML_API_KEY"]);

/** Names a dependency may receive: what it requires plus what its permissions declare. */
export function declaredEnv(meta: DependencyMeta): string[] {
  return [...new Set([...meta.envRequired, ...meta.permissions.env])].filter((n) => !NEVER.has(n));
}

/** Required variables absent from `env`. */
export function missingEnv(meta: DependencyMeta, env: Readonly<Record<string, string>>): string[] {
  return meta.envRequired.filter((n) => !NEVER.has(n) && !env[n]);
}

/**
 * The message for missing variables (the `api_key_required` case): which server, which variables,
 * and where to set them.
 */
export function missingEnvMessage(server: string, missing: readonly string[]): string {
  const vars = missing.join(", ");
  const example = missing.map((n) => `"${n}": "…"`).join(", ");
  return `${server} requires ${vars}: set ${
    missing.length > 1 ? "them" : "it"
  } in the environment ` +
    `of your MCP client, e.g. in .mcp.json: "mcpServers": {"pml": {…, "env": {${example}}}}, then restart it`;
}

/** The variables of `env` among `names` (those it has). */
export function pickEnv(
  env: Readonly<Record<string, string>>,
  names: readonly string[],
): Record<string, string> {
  return Object.fromEntries(names.filter((n) => env[n] !== undefined).map((n) => [n, env[n]]));
}

/**
 * `value` with its `${name}` placeholders replaced from `vars` (`${workspace}`, `${packageDir}`);
 * an unknown one is the metadata's error.
 */
export function expandPlaceholders(
  value: string,
  vars: Record<string, string>,
  server: string,
): string {
  return value.replace(/\$\{([A-Za-z]+)\}/g, (whole, name: string) => {
    if (vars[name] === undefined) {
      throw new PmlError(
        "METADATA_INVALID",
        `Metadata of "${server}" uses unknown placeholder ${whole} in "${value}"`,
      );
    }
    return vars[name];
  });
}

function grant(flag: string, values: readonly string[]): string[] {
  for (const v of values) {
    if (v.includes(",")) {
      throw new PmlError("METADATA_INVALID", `Cannot grant ${flag}="${v}": it contains a comma`);
    }
  }
  return values.length ? [`${flag}=${[...new Set(values)].join(",")}`] : [];
}

/** The arguments the declared command passes to the server itself (after the package spec). */
function serverArgs(meta: DependencyMeta): readonly string[] {
  const pkg = meta.package;
  if (!pkg) return meta.args;
  const at = meta.args.findIndex((a) => a === pkg.name || a.startsWith(`${pkg.name}@`));
  return at >= 0 ? meta.args.slice(at + 1) : meta.args.filter((a) => !a.startsWith("-"));
}

/**
 * An npm server under Deno, with least privilege: read its own install folder and what it declares,
 * write what it declares, net to the declared hosts only, env limited to the declared names (other
 * names read as unset: `--ignore-env`), no subprocesses, no prompts. `${workspace}` and
 * `${packageDir}` are expanded. The process environment holds only the declared variables.
 */
export function denoLaunch(
  meta: DependencyMeta,
  installed: InstalledPackage,
  ctx: {
    workspace: string;
    denoPath: string;
    denoDir: string;
    env: Readonly<Record<string, string>>;
    /** Injectable for tests; detected once per process by default. */
    osSandbox?: OsSandboxStatus;
    /** `.pml.json` `sandbox.unconfined`: without an OS sandbox, run with Deno's flags only. */
    unconfined?: boolean;
    /** `.pml.json` `sandbox.deny`: secrets besides the built-in ones. */
    deny?: readonly string[];
  },
): LaunchSpec {
  const vars = { workspace: ctx.workspace, packageDir: installed.packageDir };
  const x = (vs: readonly string[]) => vs.map((v) => expandPlaceholders(v, vars, meta.server));
  const envNames = declaredEnv(meta);
  const args = [
    "run",
    "--no-prompt",
    "--quiet",
    "--no-lock",
    `--config=${installed.dir}/deno.json`,
    ...grant("--allow-read", [installed.dir, ...x(meta.permissions.read)]),
    ...grant("--allow-write", x(meta.permissions.write)),
    ...grant("--allow-net", meta.permissions.net),
    ...grant("--allow-env", envNames),
    "--ignore-env",
    installed.bin,
    ...x(serverArgs(meta)),
  ];
  const env: Record<string, string> = {
    NO_COLOR: "1",
    DENO_NO_UPDATE_CHECK: "1",
    DENO_DIR: ctx.denoDir,
    ...pickEnv(ctx.env, envNames),
  };
  const os = ctx.osSandbox ?? detectOsSandbox(ctx.env.PATH);
  if (!os.available) {
    refuseWithoutOsWall(meta.server, os, ctx.unconfined ?? false);
    return {
      server: meta.server,
      command: ctx.denoPath,
      args,
      env,
      cwd: ctx.workspace,
      mode: "deno",
      unconfined: os.reason,
    };
  }
  // The OS wall (DESIGN §12): only its install folder and its declared grants exist for it, the
  // control files stay read-only, and the network only to its hosts, through the proxy (Deno's
  // --allow-net narrows it to those too).
  const read = [installed.dir, ...x(meta.permissions.read)];
  const write = x(meta.permissions.write);
  const policy = sandboxPolicy({
    view: "toolbox",
    env: ctx.env,
    deny: ctx.deny,
    read: [...read, ctx.workspace],
    write,
    denyWrite: guardedPaths([ctx.workspace, ...write]),
    net: meta.permissions.net,
  });
  // No seccomp filter here: under it, Deno's Node compatibility layer stopped answering (the
  // memory server's calls hung). Deno's flags stand instead: a unix socket is connected to only
  // with read and write access to its path, which an npm server has only where it declares.
  const argv = [ctx.denoPath, ...args];
  const { walled, net, privateDir } = wallLaunch(os, policy, ctx.workspace, argv, {
    denoPath: ctx.denoPath,
  });
  return {
    server: meta.server,
    ...walled,
    env: {
      ...env,
      DENO_DIR: privateDir ? `${privateDir}/deno` : SANDBOX_DENO_DIR,
      ...(privateDir ? { TMPDIR: `${privateDir}/tmp` } : {}),
      ...(net ? HTTP_PROXY_ENV : {}),
    },
    cwd: ctx.workspace,
    mode: "deno",
    group: groupOf(policy),
    ...(net ? { netProxy: net } : {}),
    declared: `${meta.package?.name}@${meta.package?.version} under Deno`,
  };
}

/** The control group of a sandbox with `policy`'s limits. */
export function groupOf(policy: OsPolicy): GroupLimits {
  return { tasks: policy.limits.tasks, memoryMb: policy.limits.memoryMb };
}

/** The proxy a sandbox with network grants needs, or none. */
function netProxyFor(policy: OsPolicy, os: OsWall): LaunchSpec["netProxy"] {
  if (policy.net.length === 0) return undefined;
  return { grants: policy.net, dir: proxyDir(), ...("bwrap" in os ? {} : { tcp: true }) };
}

/**
 * Behind Landlock or Seatbelt: the private folder of the sandbox (chosen now, made at each start;
 * under the real path of the temporary folder, as Seatbelt matches real paths).
 */
function privateDirFor(os: OsWall): LaunchSpec["landlock"] {
  if ("bwrap" in os) return undefined;
  let tmp = Deno.env.get("TMPDIR") || "/tmp";
  try {
    tmp = Deno.realPathSync(tmp);
  } catch { /* as given: making the folder will say what is wrong */ }
  return { privateDir: `${tmp}/pml-sandbox-${crypto.randomUUID().slice(0, 13)}` };
}

/** The spec's field for the private folder, by wall. */
function privateDirSpec(
  os: OsWall,
  own: LaunchSpec["landlock"],
): Pick<LaunchSpec, "landlock" | "seatbelt"> {
  if (!own) return {};
  return "seatbelt" in os ? { seatbelt: own } : { landlock: own };
}

/**
 * `command` behind the wall `os` under `policy` (`cwd` inside it), with what the wall needs beside
 * it: the network proxy when the policy grants hosts, the private folder behind Landlock or
 * Seatbelt. `walled` is the spec's part of it (the command, in the spec's order of fields).
 */
export function wallLaunch(
  os: OsWall,
  policy: OsPolicy,
  cwd: string,
  command: readonly string[],
  opts: { denoPath?: string; seccomp?: string },
): {
  walled: Pick<LaunchSpec, "command" | "osWall" | "landlock" | "seatbelt" | "args">;
  net: LaunchSpec["netProxy"];
  privateDir: string | undefined;
} {
  const net = netProxyFor(policy, os);
  const own = privateDirFor(os);
  const started = wallCommand(os, policy, cwd, command, {
    ...opts,
    netDir: net?.dir,
    privateDir: own?.privateDir,
  });
  return {
    walled: {
      command: started.program,
      osWall: true,
      ...privateDirSpec(os, own),
      args: started.args,
    },
    net,
    privateDir: own?.privateDir,
  };
}
