import { SandboxProcess } from "../sandbox/sandbox_process.ts";
import type { SandboxSpec } from "../sandbox/sandbox_spec.ts";
import type { AheadCalls } from "../sandbox/call_relay.ts";
import { aheadKey } from "./read_ahead.ts";
import { sandboxEntry } from "../paths.ts";
import { sandboxPolicy } from "../sandbox/policy.ts";

const EXEC_ENTRY = sandboxEntry("exec_entry");

/**
 * The `pml:execute` sandbox as data: no read, write, net or run grant, an empty environment, and
 * `/` as working directory (the code learns nothing of the workspace from `Deno.cwd()`). Where the
 * OS sandbox exists it also sees no folder of the user, no network, and a private Deno cache, so
 * `localStorage` and the Cache API write to a tmpfs that dies with the execution.
 */
export function execSandboxSpec(): SandboxSpec {
  return {
    entry: EXEC_ENTRY,
    read: [],
    write: [],
    net: [],
    run: false,
    env: {},
    cwd: "/",
    os: sandboxPolicy({ view: "narrow", env: {} }),
    maxRssMb: EXEC_MAX_RSS_MB,
  };
}

/** Memory one `pml:execute` may hold, array buffers included. */
export const EXEC_MAX_RSS_MB = 512;

/** The namespace of the warm-up's `mcp.*` calls: answered by the pool, never by a tool. */
export const WARM_UP_NS = "pml_warm_up";

/**
 * Code the pool runs in the warm process before an execution takes it. A fresh Deno compiles each
 * function of the runner on first use: this run pays that (and the first `mcp.*` round trips) off
 * the critical path. Its first two calls are given as started ahead ({@link warmUpAhead}), one
 * outcome there before the call and one after, as `pml:execute` code that only reads gets its
 * reads (`read_ahead.ts`): the runner's side of that path (the call's key, the take, the wait)
 * was otherwise compiled during the first execution. It declares nothing outside its own function
 * body, so it leaves nothing the next code could see.
 */
const WARM_UP_CODE = `
  const one = await mcp.${WARM_UP_NS}.echo({ n: 1 });
  const [two, three] = await Promise.all([
    mcp.${WARM_UP_NS}.echo({ n: 2 }),
    mcp.${WARM_UP_NS}.echo({ n: 3 }),
  ]);
  return one.n + two.n + three.n;`;
const WARM_UP_RESULT = 6;

/**
 * The warm-up's calls `n: 1` and `n: 2` as started ahead: the first one's outcome is sent with the
 * code, the second one's once the code has taken it (`n: 3` goes as a plain `mcp` call).
 */
function warmUpAhead(): AheadCalls {
  let taken!: () => void;
  const second = new Promise<unknown>((resolve) => (taken = () => resolve({ n: 2 })));
  return {
    keys: [1, 2].map((n) => aheadKey(`${WARM_UP_NS}:echo`, { n })),
    outcomes: [Promise.resolve({ n: 1 }), second],
    onTaken: (index) => index === 1 && taken(),
  };
}

/**
 * Answers the warm-up's one live call (`n: 3`) and nothing else: this handler serves no other
 * execution, and a warm-up whose calls `n: 1` or `n: 2` missed their outcomes started ahead (the
 * runner's key and the host's differ) fails instead of passing unseen.
 */
function answerWarmUp(tool: string, args: unknown): Promise<unknown> {
  return tool === `${WARM_UP_NS}:echo` && (args as { n?: unknown } | null)?.n === 3
    ? Promise.resolve(args)
    : Promise.reject(new Error(`mcp.${tool} is not available here`));
}

/**
 * Sandboxes for `pml:execute`, one per execution: a process that ran user code is killed after it
 * (the code could have left state behind), never reused. One fresh process is kept warm so that an
 * execution does not wait for Deno to start. The next one starts when the taken one exits, not
 * when it is taken: a Deno start-up costs ~30 ms of CPU, which would otherwise compete with the
 * execution it is meant to speed up (on two cores, it made executions ~2× slower).
 */
export class ExecSandboxPool {
  #spec: SandboxSpec | (() => SandboxSpec);
  readonly #opts: ConstructorParameters<typeof SandboxProcess>[1];
  readonly #live = new Set<SandboxProcess>();
  #warm?: SandboxProcess;
  #keepWarm: boolean;
  #warmedUp: Promise<boolean> = Promise.resolve(false);
  #closed = false;

  /**
   * `spec` may be given as a function, called when the first process starts: as root, the policy's
   * look at the machine walks `/etc` (~1,200 entries), which a gateway that never runs
   * `pml:execute` need not pay, and which delayed every `pml stdio`'s first answer (docs/speed.md).
   */
  constructor(
    spec: SandboxSpec | (() => SandboxSpec),
    opts: { keepWarm?: boolean } & ConstructorParameters<typeof SandboxProcess>[1] = {},
  ) {
    this.#spec = spec;
    const { keepWarm, ...procOpts } = opts;
    this.#keepWarm = keepWarm ?? true;
    this.#opts = procOpts;
  }

  /**
   * Starts the warm process now (otherwise it starts with the first execution), and warms it up
   * with {@link WARM_UP_CODE} once it is ready.
   */
  prewarm(): void {
    if (this.#closed || !this.#keepWarm || this.#warm?.alive) return;
    const proc = this.#warm = this.#spawn();
    const warmedUp = this.#warmedUp = proc.ready
      .then(() =>
        proc.call(
          { ns: "exec", action: "run", args: { code: WARM_UP_CODE }, workspace: "/" },
          { onMcp: answerWarmUp, ahead: warmUpAhead() },
        )
      )
      .then((value) => value === WARM_UP_RESULT, () => false);
    // A warm process that dies before it is taken (killed from outside, out of memory) is
    // replaced at once, so that the next execution still finds one. One that died before its
    // warm-up ran is not started again and again: the next take starts one and says why it fails.
    proc.exited.then(async () => {
      if (!(await warmedUp) || this.#warm !== proc) return;
      this.#warm = undefined;
      this.prewarm();
    });
  }

  /**
   * Settles once the warm process has started and run its warm-up: true if the warm-up ran (false
   * if the process died first, or if no warm process was started).
   */
  warmedUp(): Promise<boolean> {
    return this.#warmedUp;
  }

  /** Wakes the warm process ahead of {@link take} (see `SandboxProcess.poke`). */
  wake(): void {
    this.#warm?.poke();
  }

  /** A fresh process for one execution (the caller kills it after); its exit warms the next. */
  take(): SandboxProcess {
    if (this.#closed) throw new Error("pml:execute sandbox pool is closed");
    const warm = this.#warm;
    this.#warm = undefined;
    const proc = warm?.alive ? warm : this.#spawn();
    proc.exited.then(() => this.prewarm());
    return proc;
  }

  /** A process started now, bypassing the warm one (for benchmarks of the cold path). */
  takeCold(): SandboxProcess {
    if (this.#closed) throw new Error("pml:execute sandbox pool is closed");
    return this.#spawn();
  }

  /** What each process of the pool starts with. */
  get spec(): SandboxSpec {
    if (typeof this.#spec === "function") this.#spec = this.#spec();
    return this.#spec;
  }

  /** Live processes, warm one included (for tests and status). */
  get processes(): SandboxProcess[] {
    return [...this.#live].filter((p) => p.alive);
  }

  /** Kills every process (warm and running) and waits until all are reaped. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#warm = undefined;
    await Promise.all([...this.#live].map((p) => p.close()));
  }

  #spawn(): SandboxProcess {
    const proc = new SandboxProcess(this.spec, this.#opts);
    this.#live.add(proc);
    proc.exited.then(() => this.#live.delete(proc));
    return proc;
  }
}
