import { join } from "node:path";
import { writeFileAtomic } from "../../config/write_json.ts";
import { liveProcesses, procStat } from "../../procfs.ts";

/** A process as recorded: its pid (= process group id) and its start time, against pid reuse. */
interface Recorded {
  readonly pid: number;
  readonly start?: string;
  readonly server?: string;
}

interface OwnerFile {
  owner: Recorded;
  children: Recorded[];
}

/** Start time of a process (Linux `/proc/<pid>/stat` field 22), `undefined` when it is gone. */
export function processStart(pid: number): string | undefined {
  const s = procStat(pid);
  return s && s.state !== "Z" ? s.start : undefined;
}

/**
 * True when process group `p.pid` still holds a process of the recorded group: its leader (same
 * start time), or, the leader being gone, a member started no earlier than the leader was (a pid is
 * not reused while its group exists, so such members are the leader's descendants).
 */
function groupAlive(p: Recorded): boolean {
  if (alive(p)) return true;
  return liveProcesses().some((s) =>
    s.pgid === p.pid && (p.start === undefined || Number(s.start) >= Number(p.start))
  );
}

function alive(p: Recorded): boolean {
  const start = processStart(p.pid);
  return start !== undefined && (p.start === undefined || p.start === start);
}

/**
 * Records the process groups this `pml` started in `.pml/deps.pids/<pml pid>.json`, so that a
 * later `pml` can kill what a killed one left behind ({@link reapOrphans}). Each `pml` writes only
 * its own file, so several of them can share a workspace.
 */
export class PidFile {
  readonly dir: string;
  readonly #path: string;
  readonly #owner: Recorded;
  #children = new Map<number, Recorded>();
  #chain: Promise<unknown> = Promise.resolve();

  constructor(workspace: string, ownerPid: number = Deno.pid) {
    this.dir = join(workspace, ".pml", "deps.pids");
    this.#path = join(this.dir, `${ownerPid}.json`);
    this.#owner = { pid: ownerPid, start: processStart(ownerPid) };
  }

  add(pid: number, server: string): Promise<void> {
    this.#children.set(pid, { pid, start: processStart(pid), server });
    return this.#flush();
  }

  remove(pid: number): Promise<void> {
    if (!this.#children.delete(pid)) return Promise.resolve();
    return this.#flush();
  }

  /**
   * Kills the process groups recorded by `pml` processes that are gone (SIGKILL of `pml` itself),
   * including groups whose leader already exited but left children, and removes their files.
   * Returns the process group ids it killed.
   */
  async reapOrphans(): Promise<number[]> {
    const killed: number[] = [];
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(this.dir));
    } catch {
      return killed;
    }
    for (const e of entries) {
      const path = join(this.dir, e.name);
      if (!e.name.endsWith(".json") || path === this.#path) continue;
      let file: OwnerFile;
      try {
        file = JSON.parse(await Deno.readTextFile(path));
      } catch {
        continue; // being written by its (live) owner, or not ours
      }
      if (alive(file.owner)) continue;
      for (const child of file.children ?? []) {
        if (!groupAlive(child)) continue;
        try {
          Deno.kill(-child.pid, "SIGKILL");
          killed.push(child.pid);
        } catch { /* gone meanwhile */ }
      }
      await Deno.remove(path).catch(() => {});
    }
    return killed;
  }

  /** Removes this `pml`'s file (on shutdown, after its children are stopped). */
  async clear(): Promise<void> {
    this.#children.clear();
    await this.#chain;
    await Deno.remove(this.#path).catch(() => {});
  }

  #flush(): Promise<void> {
    const next = this.#chain.then(async () => {
      if (this.#children.size === 0) {
        await Deno.remove(this.#path).catch(() => {});
        return;
      }
      const file: OwnerFile = { owner: this.#owner, children: [...this.#children.values()] };
      await writeFileAtomic(this.#path, JSON.stringify(file) + "\n");
    });
    this.#chain = next.catch(() => {});
    return next.catch(() => {});
  }
}
