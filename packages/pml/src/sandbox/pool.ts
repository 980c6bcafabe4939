import { SandboxProcess } from "./sandbox_process.ts";
import { sandboxFlags, type SandboxSpec } from "./sandbox_spec.ts";

/**
 * Warm sandbox processes, one per permission set (the spec's flags and env). A process that died
 * (crash, timeout kill) is replaced on the next `get`.
 */
export class SandboxPool {
  #procs = new Map<string, SandboxProcess>();
  /** Replaced processes that still finish their calls in flight. */
  #retired = new Set<SandboxProcess>();
  #closed = false;
  readonly #opts: ConstructorParameters<typeof SandboxProcess>[1];

  constructor(opts: ConstructorParameters<typeof SandboxProcess>[1] = {}) {
    this.#opts = opts;
  }

  /**
   * The live process for `spec`, started if needed. A process started for the same flags under
   * another OS policy (a control file appeared since, so it must now be bound read-only) is
   * replaced, and ends once its calls in flight are done.
   */
  get(spec: SandboxSpec): SandboxProcess {
    if (this.#closed) throw new Error("Sandbox pool is closed");
    const key = JSON.stringify([sandboxFlags(spec), spec.env, spec.cwd]);
    let proc = this.#procs.get(key);
    if (proc?.alive && osKey(proc.spec.os, proc.wall) !== osKey(spec.os, proc.wall)) {
      const old = proc;
      this.#retired.add(old);
      old.exited.then(() => this.#retired.delete(old));
      old.closeWhenIdle();
      proc = undefined;
    }
    if (!proc || !proc.alive) {
      proc = new SandboxProcess(spec, this.#opts);
      this.#procs.set(key, proc);
    }
    return proc;
  }

  /** Live processes (for status and tests). */
  get processes(): SandboxProcess[] {
    return [...this.#procs.values()].filter((p) => p.alive);
  }

  /** Kills every process (replaced ones still finishing their calls included) and waits. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#procs.values(), ...this.#retired].map((p) => p.close()));
    this.#procs.clear();
    this.#retired.clear();
  }
}

/**
 * What of a policy decides whether a warm sandbox behind `wall` still fits it: all of it, but the
 * `listing` only behind Landlock (the other walls see a new entry of those folders at once).
 */
function osKey(os: SandboxSpec["os"], wall: SandboxProcess["wall"]): string {
  return JSON.stringify(os && wall !== "landlock" ? { ...os, listing: undefined } : os);
}
