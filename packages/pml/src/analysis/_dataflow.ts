/**
 * Data-flow primitives: which tool results a value may carry ("taint"), and the task graph that
 * `dependsOn` is built from. Taint sets are immutable once created, so they can be shared.
 */

/** Ids of the tasks whose results a value may carry. Never mutated after creation. */
export type TSet = ReadonlySet<string>;

export const NO_TAINT: TSet = new Set<string>();

/** Abstract value: its taint, refined per element (arrays) or per property (object literals). */
export interface Val {
  t: TSet;
  elems?: Val[];
  props?: Map<string, Val>;
  /** Set when the value is a function defined in the code (its summary). */
  fn?: FnInfo;
}

export const NONE: Val = { t: NO_TAINT };

/** One call site of a tool, as recorded during the walk. */
export interface TaskRec {
  id: string;
  tool: string;
  line: number;
  column: number;
  deps: Set<string>;
  inLoop: boolean;
  /** The call's possible arguments, when all are known before the code runs. */
  args?: Record<string, unknown>[];
}

/**
 * Summary of a function defined in the code, used at its call sites: the tasks in its body get
 * the call's argument taint as extra dependencies, and the call's value carries `ret`.
 */
export interface FnInfo {
  tasks: TaskRec[];
  ret: TSet;
  walked: boolean;
  /** Argument taint of calls seen before the body was walked (hoisted declarations). */
  pending: TSet;
  pendingLoop: boolean;
  /** Walks a hoisted declaration on its first call, when that call precedes the declaration. */
  lazy?: () => void;
}

export function newFnInfo(): FnInfo {
  return { tasks: [], ret: NO_TAINT, walked: false, pending: NO_TAINT, pendingLoop: false };
}

/** Union of two taint sets, reusing an operand when possible. */
export function union(a: TSet, b: TSet): TSet {
  if (b.size === 0 || a === b) return a;
  if (a.size === 0) return b;
  let subset = true;
  for (const x of b) {
    if (!a.has(x)) {
      subset = false;
      break;
    }
  }
  if (subset) return a;
  const out = new Set(a);
  for (const x of b) out.add(x);
  return out;
}

/** The value `v` with extra taint `t` (refinements kept, each tainted too). */
export function taintWith(v: Val, t: TSet): Val {
  if (t.size === 0) return v;
  return v.fn ? { t: union(v.t, t), fn: v.fn } : { t: union(v.t, t) };
}

/** Joins two values, dropping refinements (the result may be either). */
export function join(a: Val, b: Val): Val {
  if (b.t.size === 0 && !b.fn) return a;
  return { t: union(a.t, b.t) };
}

/** Refinement of `v` at property `key` (array index or object property), else `v` itself. */
export function refine(v: Val, key: string | undefined): Val {
  if (key === undefined) return { t: v.t };
  if (v.props) return v.props.get(key) ?? { t: v.t };
  if (v.elems) {
    const i = Number(key);
    if (Number.isInteger(i) && i >= 0 && i < v.elems.length) return v.elems[i];
  }
  return { t: v.t };
}

/** Task graph under construction: adds edges without ever closing a cycle. */
export class TaskGraph {
  readonly tasks: TaskRec[] = [];
  readonly #byId = new Map<string, TaskRec>();

  add(
    tool: string,
    line: number,
    column: number,
    deps: TSet,
    inLoop: boolean,
    args?: Record<string, unknown>[],
  ): TaskRec {
    const id = `t${this.tasks.length + 1}`;
    const rec: TaskRec = { id, tool, line, column, deps: new Set(deps), inLoop };
    if (args) rec.args = args;
    this.tasks.push(rec);
    this.#byId.set(id, rec);
    return rec;
  }

  /** Adds `deps` to `task`, skipping any edge that would close a cycle. */
  addDeps(task: TaskRec, deps: TSet): void {
    for (const d of deps) {
      if (d === task.id || task.deps.has(d)) continue;
      if (!this.#reaches(d, task.id)) task.deps.add(d);
    }
  }

  /** Applies a call of a summarised function: its tasks depend on the call's argument taint. */
  applyCall(fn: FnInfo, args: TSet, inLoop: boolean): void {
    if (!fn.walked) {
      fn.pending = union(fn.pending, args);
      fn.pendingLoop ||= inLoop;
      return;
    }
    for (const task of fn.tasks) {
      this.addDeps(task, args);
      if (inLoop) task.inLoop = true;
    }
  }

  /** Marks a summarised function as walked and applies the calls seen before. */
  finish(fn: FnInfo): void {
    fn.walked = true;
    if (fn.pending.size > 0 || fn.pendingLoop) this.applyCall(fn, fn.pending, fn.pendingLoop);
  }

  #reaches(from: string, to: string): boolean {
    const seen = new Set<string>();
    const stack = [from];
    while (stack.length > 0) {
      const id = stack.pop()!;
      if (id === to) return true;
      if (seen.has(id)) continue;
      seen.add(id);
      const rec = this.#byId.get(id);
      if (rec) { for (const d of rec.deps) stack.push(d); }
    }
    return false;
  }
}
