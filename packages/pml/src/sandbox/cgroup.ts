/**
 * Kernel limits of a whole sandbox through a control group, where `pml` may create one (root, or
 * a delegated cgroup v2 subtree): `pids.max` caps its tasks and `memory.max` (v1:
 * `memory.limit_in_bytes`) its memory, tmpfs pages included. This is what holds when `pml` runs
 * as root: the kernel never applies `RLIMIT_NPROC` to host uid 0, and a sandbox's uid maps to it.
 * Elsewhere `limits.ts`'s rlimits and the watchdogs hold.
 *
 * The sandbox joins the group before it starts anything: {@link joinThenRun} is a `sh` prefix
 * that moves itself into the group and then becomes `bwrap`.
 *
 * @module
 */

/** What one group caps. */
export interface GroupLimits {
  readonly tasks: number;
  readonly memoryMb?: number;
}

/** A created group: its folders (one per v1 hierarchy, one for v2) and how to remove them. */
export interface SandboxGroup {
  /** `cgroup.procs` files the sandbox writes its pid to. */
  readonly procs: readonly string[];
  /** Tasks in the group now (for tests and the attack suite's peaks). */
  tasks(): number;
  /** The most tasks it held (v1 and v2 without `pids.peak`: `undefined`). */
  peakTasks(): number | undefined;
  /** Removes the folders (the group must be empty: called once the sandbox exited). */
  remove(): Promise<void>;
}

const ROOT = "/sys/fs/cgroup";
/**
 * Names this isolate's groups apart from those of other isolates of the same process (a Worker,
 * each module of `deno test`): a counter alone starts at 1 in each, and a name another isolate
 * still holds made the creation fail, silently leaving that isolate's sandboxes without a group.
 */
let isolateTag: string | undefined;
let counter = 0;
let unavailable = false;
let swept = false;

/** Removes the empty groups of `pml` processes that ended without removing theirs (SIGKILL). */
function sweep(parent: string): void {
  try {
    for (const entry of Deno.readDirSync(parent)) {
      const m = /^pml-(\d+)-(?:[0-9a-f]+-)?\d+$/.exec(entry.name);
      if (!m || Number(m[1]) === Deno.pid || isDir(`/proc/${m[1]}`)) continue;
      try {
        Deno.removeSync(`${parent}/${entry.name}`);
      } catch { /* still in use */ }
    }
  } catch { /* unreadable */ }
}

/** This process's path in each hierarchy (`""` key: the v2 one), from `/proc/self/cgroup`. */
function ownPaths(): Map<string, string> {
  const out = new Map<string, string>();
  try {
    for (const line of Deno.readTextFileSync("/proc/self/cgroup").split("\n")) {
      const [, controllers, path] = line.split(":");
      if (path === undefined) continue;
      for (const c of controllers.split(",")) out.set(c.replace(/^name=/, ""), path);
    }
  } catch { /* not Linux */ }
  return out;
}

function write(path: string, value: string): void {
  Deno.writeTextFileSync(path, value);
}

function isDir(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory;
  } catch {
    return false;
  }
}

/**
 * Creates a group with `limits` for one sandbox, or returns `undefined` when this machine does
 * not let `pml` (no cgroup file system, not root and no delegation). Tried once per process when
 * it fails.
 */
export function createGroup(limits: GroupLimits): SandboxGroup | undefined {
  if (unavailable || Deno.build.os !== "linux") return undefined;
  isolateTag ??= [...crypto.getRandomValues(new Uint8Array(4))]
    .map((b) => b.toString(16).padStart(2, "0")).join("");
  const name = `pml-${Deno.pid}-${isolateTag}-${++counter}`;
  const made: string[] = [];
  try {
    const paths = ownPaths();
    const v1pids = join(ROOT, "pids");
    let pidsDir: string;
    let memDir: string | undefined;
    if (isDir(v1pids) && paths.has("pids")) {
      pidsDir = join(v1pids, paths.get("pids")!, name);
      if (!swept) sweep(dirname(pidsDir));
      Deno.mkdirSync(pidsDir);
      made.push(pidsDir);
      write(`${pidsDir}/pids.max`, String(limits.tasks));
      const v1mem = join(ROOT, "memory");
      if (limits.memoryMb && isDir(v1mem) && paths.has("memory")) {
        memDir = join(v1mem, paths.get("memory")!, name);
        if (!swept) sweep(dirname(memDir));
        Deno.mkdirSync(memDir);
        made.push(memDir);
        write(`${memDir}/memory.limit_in_bytes`, String(limits.memoryMb * 1024 * 1024));
      }
    } else {
      // cgroup v2: a child of this process's own group (it must have the controllers delegated).
      pidsDir = join(ROOT, paths.get("") ?? "/", name);
      if (!swept) sweep(dirname(pidsDir));
      Deno.mkdirSync(pidsDir);
      made.push(pidsDir);
      write(`${pidsDir}/pids.max`, String(limits.tasks));
      if (limits.memoryMb) write(`${pidsDir}/memory.max`, String(limits.memoryMb * 1024 * 1024));
    }
    swept = true;
    const procs = made.map((dir) => `${dir}/cgroup.procs`);
    return {
      procs,
      tasks: () => Number(Deno.readTextFileSync(`${pidsDir}/pids.current`).trim()),
      peakTasks: () => {
        try {
          return Number(Deno.readTextFileSync(`${pidsDir}/pids.peak`).trim());
        } catch {
          return undefined;
        }
      },
      remove: () => removeAll(made),
    };
  } catch {
    void removeAll(made);
    unavailable = true;
    return undefined;
  }
}

function join(...parts: string[]): string {
  return parts.join("/").replace(/\/+/g, "/");
}

function dirname(path: string): string {
  return path.slice(0, path.lastIndexOf("/")) || "/";
}

/** Removes the groups, retrying while the kernel still counts the sandbox's last tasks. */
async function removeAll(dirs: readonly string[]): Promise<void> {
  for (const dir of [...dirs].reverse()) {
    for (let attempt = 0; attempt < 50; attempt++) {
      try {
        Deno.removeSync(dir);
        break;
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) break;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }
}

/**
 * `command` started inside `group`: `sh` writes its own pid to each `cgroup.procs`, then becomes
 * the command, so everything the sandbox starts is counted from its first instruction.
 */
export function joinThenRun(group: SandboxGroup, command: readonly string[]): string[] {
  const joins = group.procs.map((_, i) => `echo $$ > "$${i + 1}"`).join(" && ");
  return [
    "/bin/sh",
    "-c",
    `${joins} && shift ${group.procs.length} && exec "$@"`,
    "pml-limits",
    ...group.procs,
    ...command,
  ];
}
