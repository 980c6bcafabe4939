/**
 * The operating-system wall around local execution (DESIGN §12 "Two walls"): on Linux, bubblewrap
 * (`bwrap`) starts each sandbox in its own mount, pid, network, IPC and UTS namespaces. The mount
 * namespace holds only the system folders read-only, PML's own code and the Deno binary read-only,
 * and the paths the policy grants; the control files are bound read-only over a writable
 * workspace; `/tmp` and `HOME` are private and empty; `/proc` shows only the sandbox's processes.
 * Deno's permission flags stay the second wall inside.
 *
 * The policy is plain data ({@link OsPolicy}) so that tests and `pml status` can read it.
 *
 * @module
 */
import { exists } from "../exists.ts";
import { PML_CODE_DIRS } from "../paths.ts";
import { dirname, join } from "node:path";

/** What one sandbox may see of the machine. */
export interface OsPolicy {
  /** Bound read-only (besides the system folders, the Deno binary and PML's code). */
  readonly ro: readonly string[];
  /** Bound read-write. */
  readonly rw: readonly string[];
  /** Bound read-only over the binds above (PML's control files), when they exist. */
  readonly protect: readonly string[];
  /** Share the host's network (never for std tools). */
  readonly net: boolean;
  /**
   * Which system folders: `full` for programs (`shell:exec`, stdio dependencies: /usr, /bin, /etc,
   * …), `libs` for Deno code alone (/usr and /lib*: no /etc, so a symlink raced to it finds nothing).
   */
  readonly system?: "full" | "libs";
}

/** System folders visible read-only inside every sandbox (those that exist). */
export const SYSTEM_RO = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/etc"] as const;

/** What Deno itself needs of the system: its shared libraries. */
export const SYSTEM_LIBS = ["/usr", "/lib", "/lib64", "/lib32"] as const;

/** Inside the sandbox: an empty, private home and temp folder. */
export const SANDBOX_HOME = "/tmp/home";
/** Deno's cache inside the sandbox: private, so no sandbox can poison another's. */
export const SANDBOX_DENO_DIR = "/tmp/deno";

/**
 * The `bwrap` arguments that run `command` under `policy` (`cwd` must be inside a bind).
 *
 * @example
 * ```ts
 * bwrapArgs({ ro: ["/ws"], rw: [], protect: [], net: false }, "/ws", ["deno", "run", "x.ts"]);
 * ```
 */
export function bwrapArgs(
  policy: OsPolicy,
  cwd: string,
  command: readonly string[],
  denoPath = Deno.execPath(),
): string[] {
  const args = [
    "--unshare-all",
    ...(policy.net ? ["--share-net"] : []),
    "--die-with-parent",
    "--new-session",
    "--cap-drop",
    "ALL",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
    "--tmpfs",
    "/tmp",
    "--dir",
    SANDBOX_HOME,
    "--dir",
    SANDBOX_DENO_DIR,
  ];
  const system = policy.system === "libs" ? SYSTEM_LIBS : SYSTEM_RO;
  for (const dir of system) if (exists(dir)) args.push("--ro-bind", dir, dir);
  args.push("--ro-bind", dirname(denoPath), dirname(denoPath));
  // PML's own code and data (the package folder, the std modules), read-only.
  for (const dir of PML_CODE_DIRS) args.push("--ro-bind", dir, dir);
  for (const path of policy.ro) args.push("--ro-bind-try", path, path);
  for (const path of policy.rw) args.push("--bind-try", path, path);
  const protect = policy.protect.filter(exists);
  // The folder of a protected file (`.vscode/` of `.vscode/mcp.json`) is bound onto itself: a
  // mount point cannot be renamed or removed, so the file cannot be moved away with its folder
  // and replaced. Its other files stay writable.
  const folders = new Set(protect.map((path) => dirname(path)));
  for (const dir of folders) {
    if (!policy.rw.includes(dir) && policy.rw.some((root) => dir.startsWith(`${root}/`))) {
      args.push("--bind", dir, dir);
    }
  }
  for (const path of protect) args.push("--ro-bind", path, path);
  // A grant inside a control folder keeps its access (a dependency's own folder under
  // `.pml/deps/`); the control files themselves stay read-only.
  for (const path of policy.rw) {
    if (policy.protect.some((p) => path.startsWith(`${p}/`))) args.push("--bind-try", path, path);
  }
  args.push("--chdir", cwd, "--", ...command);
  return args;
}

/** Whether bubblewrap works here, and if not, why (for the refusal message and `pml status`). */
export type OsSandboxStatus =
  | { readonly available: true; readonly bwrap: string }
  | { readonly available: false; readonly reason: string };

const detected = new Map<string, OsSandboxStatus>();

/**
 * Finds `bwrap` on `PATH` and checks that it can create the namespaces (a container may refuse
 * user namespaces). Cached for the process, per `PATH`.
 */
export function detectOsSandbox(path = defaultPath()): OsSandboxStatus {
  let status = detected.get(path);
  if (!status) {
    const found = findBwrap(path);
    status = typeof found === "string"
      ? probed(found, outcome(() => new Deno.Command(found, PROBE).outputSync()))
      : found;
    detected.set(path, status);
  }
  return status;
}

/**
 * {@link detectOsSandbox} without blocking: the probe (a process start, ~15 ms) runs while the
 * caller goes on. Fills the same cache; the std target's prewarm awaits it before its sandbox.
 */
export async function detectOsSandboxSoon(path = defaultPath()): Promise<OsSandboxStatus> {
  const cached = detected.get(path);
  if (cached) return cached;
  const found = findBwrap(path);
  // `output()` throws a failed start synchronously: `then` turns it into a rejection.
  const probe = (bwrap: string) =>
    Promise.resolve().then(() => new Deno.Command(bwrap, PROBE).output()).catch((err: Error) =>
      err
    );
  const status = typeof found === "string" ? probed(found, await probe(found)) : found;
  // A synchronous detection may have finished meanwhile: the first answer stays.
  if (!detected.has(path)) detected.set(path, status);
  return detected.get(path)!;
}

function defaultPath(): string {
  return Deno.env.get("PATH") ?? "/usr/bin:/bin";
}

/** The probe: can bwrap create every namespace a sandbox gets, and run a program in them? */
const PROBE: Deno.CommandOptions = {
  args: ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--", "true"],
  stdout: "null",
  stderr: "piped",
};

/** The `bwrap` on `path`, or why there is none to use. */
function findBwrap(path: string): string | OsSandboxStatus {
  if (Deno.build.os !== "linux") {
    return {
      available: false,
      reason: `no OS sandbox for ${Deno.build.os} yet (PML uses bubblewrap on Linux)`,
    };
  }
  const bwrap = path.split(":").map((d) => join(d, "bwrap")).find(exists);
  if (!bwrap) {
    return {
      available: false,
      reason: "bubblewrap is not installed (Debian/Ubuntu: `sudo apt-get install bubblewrap`)",
    };
  }
  return bwrap;
}

function outcome<T>(run: () => T): T | Error {
  try {
    return run();
  } catch (err) {
    return err as Error;
  }
}

/** The status `bwrap` earns by how its probe went. */
function probed(bwrap: string, out: Deno.CommandOutput | Error): OsSandboxStatus {
  if (out instanceof Error) {
    return { available: false, reason: `bubblewrap failed: ${out.message}` };
  }
  if (!out.success) {
    const why = new TextDecoder().decode(out.stderr).trim().split("\n")[0];
    return {
      available: false,
      reason: `bubblewrap cannot create namespaces here (${why || `exit ${out.code}`})`,
    };
  }
  return { available: true, bwrap };
}
