import { basename, dirname, isAbsolute, join } from "node:path";
import { PmlError } from "../errors.ts";
import type { InstalledPackage } from "./installer.ts";
import type { DependencyMeta } from "./metadata.ts";
import { guardedPaths, within } from "../config/control_files.ts";
import { realPathOf } from "../exists.ts";
import { SANDBOX_DENO_DIR, wallCommand } from "../sandbox/os_sandbox.ts";
import {
  detectOsSandbox,
  type OsSandboxStatus,
  type OsWall,
} from "../sandbox/detect_os_sandbox.ts";
import { proxyDir } from "../sandbox/net_proxy.ts";
import type { OsPolicy } from "../sandbox/policy.ts";
import type { GroupLimits } from "../sandbox/cgroup.ts";
import { HTTP_PROXY_ENV, PROXY_ENV } from "../sandbox/net_bridge.ts";
import { sandboxPolicy } from "../sandbox/policy.ts";
import { unixSocketFilterFile } from "../sandbox/seccomp.ts";

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
function refuseWithoutOsWall(server: string, os: OsSandboxStatus, unconfined: boolean): void {
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

function pick(
  env: Readonly<Record<string, string>>,
  names: readonly string[],
): Record<string, string> {
  return Object.fromEntries(names.filter((n) => env[n] !== undefined).map((n) => [n, env[n]]));
}

function expand(value: string, vars: Record<string, string>, server: string): string {
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
  const x = (vs: readonly string[]) => vs.map((v) => expand(v, vars, meta.server));
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
    ...pick(ctx.env, envNames),
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
  const net = netProxyFor(policy, os);
  const own = privateDirFor(os);
  // No seccomp filter here: under it, Deno's Node compatibility layer stopped answering (the
  // memory server's calls hung). Deno's flags stand instead: a unix socket is connected to only
  // with read and write access to its path, which an npm server has only where it declares.
  const started = wallCommand(os, policy, ctx.workspace, [ctx.denoPath, ...args], {
    denoPath: ctx.denoPath,
    netDir: net?.dir,
    privateDir: own?.privateDir,
  });
  return {
    server: meta.server,
    command: started.program,
    osWall: true,
    ...privateDirSpec(os, own),
    args: started.args,
    env: {
      ...env,
      DENO_DIR: own ? `${own.privateDir}/deno` : SANDBOX_DENO_DIR,
      ...(own ? { TMPDIR: `${own.privateDir}/tmp` } : {}),
      ...(net ? HTTP_PROXY_ENV : {}),
    },
    cwd: ctx.workspace,
    mode: "deno",
    group: groupOf(policy),
    ...(net ? { netProxy: net } : {}),
    declared: `${meta.package?.name}@${meta.package?.version} under Deno`,
  };
}

/**
 * A declared raw command (`uvx …`, `npx …` without a pinned package). Nothing pins what it runs, so
 * it runs inside the OS sandbox like every other local execution (DESIGN §12), after an explicit
 * approval: the system read-only, the folder of the resolved command read-only (unless it, or where
 * it leads, lies in a hidden secret), the workspace and declared reads read-only, declared writes
 * read-write, a private `HOME` of its own that persists between runs (package runners keep their
 * caches there; the user's `HOME` is not its `HOME`, and is seen as the toolbox shows it), the
 * control files read-only, and the network only to the hosts its metadata declares and `.pml.json`
 * `sandbox.net` grants, through the host-side proxy (never the host's network). It gets `PATH`,
 * that `HOME` and the declared variables. Without an OS sandbox it is refused unless `.pml.json`
 * sets `sandbox.unconfined`; then it runs as declared with the user's `HOME`.
 */
export function commandLaunch(
  meta: DependencyMeta,
  ctx: {
    workspace: string;
    env: Readonly<Record<string, string>>;
    /** Where dependencies keep their files; the command's private home is `<depsDir>/<server>.home`. */
    depsDir: string;
    osSandbox?: OsSandboxStatus;
    unconfined?: boolean;
    deny?: readonly string[];
  },
): LaunchSpec {
  const vars = { workspace: ctx.workspace };
  const x = (vs: readonly string[]) => vs.map((v) => expand(v, vars, meta.server));
  const command = expand(meta.command, vars, meta.server);
  const args = meta.args.map((a) => expand(a, vars, meta.server));
  const declared = pick(ctx.env, declaredEnv(meta));
  const os = ctx.osSandbox ?? detectOsSandbox(ctx.env.PATH);
  if (!os.available) {
    refuseWithoutOsWall(meta.server, os, ctx.unconfined ?? false);
    return {
      server: meta.server,
      command,
      args,
      env: { ...pick(ctx.env, ["PATH", "HOME"]), ...declared },
      cwd: ctx.workspace,
      mode: "command",
      unconfined: os.reason,
    };
  }
  const home = commandHome(ctx.depsDir, meta.server);
  Deno.mkdirSync(home, { recursive: true });
  const path = ctx.env.PATH ?? "/usr/bin:/bin";
  const resolved = resolveCommand(command, path, ctx.workspace);
  if (!resolved) {
    // Said now, in PML's words: bubblewrap would only report a failed execvp.
    throw new PmlError(
      "DEPENDENCY_START_FAILED",
      `Cannot start ${meta.server}: its command "${command}" is not ${
        command.includes("/") ? "a file" : `on the PATH pml runs with (${path})`
      }; install it, or set the full path in private_mcps.${meta.server}.install.command`,
      { details: { server: meta.server, missing: "runtime", command } },
    );
  }
  const write = [home, ...x(meta.permissions.write)];
  const policyWith = (folders: readonly string[], own: readonly string[]) =>
    sandboxPolicy({
      view: "toolbox",
      env: ctx.env,
      deny: ctx.deny,
      read: [ctx.workspace, ...x(meta.permissions.read), ...folders, ...own],
      write,
      denyWrite: guardedPaths([ctx.workspace, ...write]),
      net: meta.permissions.net,
    });
  // The command's folder and its own files (a script among its arguments, with its package) are
  // readable, unless the read model keeps them out (secrets; for its own files also other users'
  // homes, a whole home or the root): an argument is no human's grant. Each is judged where it
  // really is too, since a bind shows what a link leads to (`./tools/x.js`, `./tools` a link into
  // `~/.config/gcloud`, would show that secret's files).
  const base = policyWith(resolved.folders, []);
  const folders = resolved.folders.filter((p) => outsideSecrets(p, base.denyRead));
  const own = ownFiles(args, ctx.workspace).filter((p) =>
    [p, realPathOf(p) ?? p].every((q) => ownFileAllowed(q, ctx.env.HOME)) &&
    outsideSecrets(p, base.denyRead)
  );
  const policy = own.length || folders.length < resolved.folders.length
    ? policyWith(folders, own)
    : base;
  const net = netProxyFor(policy, os);
  const privateDir = privateDirFor(os);
  const started = wallCommand(os, policy, ctx.workspace, [resolved.path, ...args], {
    seccomp: unixSocketFilterFile(),
    netDir: net?.dir,
    privateDir: privateDir?.privateDir,
  });
  return {
    server: meta.server,
    command: started.program,
    osWall: true,
    ...privateDirSpec(os, privateDir),
    args: started.args,
    env: {
      ...pick(ctx.env, ["PATH"]),
      HOME: home,
      ...(privateDir ? { TMPDIR: `${privateDir.privateDir}/tmp` } : {}),
      ...declared,
      ...(net ? PROXY_ENV : {}),
    },
    cwd: ctx.workspace,
    mode: "command",
    group: groupOf(policy),
    ...(net ? { netProxy: net } : {}),
    declared: [command, ...args].join(" "),
  };
}

/**
 * The files a raw command's arguments name (`node /srv/mcp/server.mjs`, `python ./tools/x.py`):
 * for each existing path, the folder of its package (the nearest folder up with a `package.json`,
 * `pyproject.toml`, `deno.json` or `go.mod`), else its own folder (a folder argument: itself), and
 * the `node_modules` folders it sits in (`node node_modules/@scope/server/dist/index.js`: npm
 * hoists the package's dependencies beside it, where Node looks for them).
 */
export function ownFiles(args: readonly string[], cwd: string): string[] {
  const out = new Set<string>();
  for (const a of args) {
    if (!(isAbsolute(a) || /^\.\.?\//.test(a))) continue;
    const p = isAbsolute(a) ? a : join(cwd, a);
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(p);
    } catch {
      continue; // not a path
    }
    const start = info.isDirectory ? p : dirname(p);
    const root = packageRoot(start) ?? start;
    out.add(root);
    for (let dir = dirname(root); dir !== dirname(dir); dir = dirname(dir)) {
      if (basename(dir) === "node_modules") out.add(dir);
    }
    // Its dependencies, where a linked node_modules really is.
    try {
      const modules = Deno.realPathSync(join(root, "node_modules"));
      if (!modules.startsWith(root + "/")) out.add(modules);
    } catch { /* none */ }
  }
  return [...out];
}

/** Whether `path`, and the real path it leads to, lie outside every one of `hidden`. */
function outsideSecrets(path: string, hidden: readonly string[]): boolean {
  return [path, realPathOf(path) ?? path].every((p) => !hidden.some((d) => within(p, d)));
}

/**
 * Whether a raw command's own folder may be granted: two levels deep at least (`/srv/mcp`, not `/`
 * or `/srv`), not the user's home or one of its parents, and not in another user's home (`/home/*`,
 * `/root`), which the read model leaves out.
 */
export function ownFileAllowed(path: string, home: string | undefined): boolean {
  if (path.split("/").filter(Boolean).length < 2) return false;
  if (home && (home === path || home.startsWith(path + "/"))) return false;
  const inHome = home !== undefined && path.startsWith(home + "/");
  return inHome || !(path.startsWith("/home/") || path === "/root" || path.startsWith("/root/"));
}

const PROJECT_FILES = ["package.json", "pyproject.toml", "deno.json", "go.mod"];

/** The nearest folder up from `from` (at most 4 levels) that holds a project file. */
function packageRoot(from: string): string | undefined {
  let dir = from;
  for (let level = 0; level < 5 && dir !== dirname(dir); level++, dir = dirname(dir)) {
    for (const f of PROJECT_FILES) {
      try {
        Deno.statSync(join(dir, f));
        return dir;
      } catch { /* next */ }
    }
  }
  return undefined;
}

function groupOf(policy: OsPolicy): GroupLimits {
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

/** The private home of a raw command: its own caches, never the user's home. */
export function commandHome(depsDir: string, server: string): string {
  return join(depsDir, `${server}.home`);
}

/**
 * `command` as the host's `PATH` finds it (or relative to `cwd`), with the folders to bind for it:
 * its own and, when it is a symlink, its target's (argv[0] keeps the name it was called by).
 */
function resolveCommand(
  command: string,
  path: string,
  cwd: string,
): { path: string; folders: string[] } | undefined {
  const candidates = command.includes("/")
    ? [isAbsolute(command) ? command : join(cwd, command)]
    : path.split(":").filter(Boolean).map((dir) => join(dir, command));
  for (const candidate of candidates) {
    try {
      if (Deno.statSync(candidate).isFile) {
        return {
          path: candidate,
          folders: [...new Set([dirname(candidate), dirname(Deno.realPathSync(candidate))])],
        };
      }
    } catch {
      // not there: the next one
    }
  }
  return undefined;
}
