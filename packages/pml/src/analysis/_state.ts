/** Walk state: scopes and bindings, the per-function frame, and what the walk records. */
import type { DynamicAccess } from "./types.ts";
import type { McpRef } from "./_calls.ts";
import { type FnInfo, TaskGraph, type TSet, union, type Val } from "./_dataflow.ts";
import { type Node, posOf } from "./_node.ts";

/** What a name is bound to: a value, or an alias of `mcp`, a namespace or a tool. */
export interface Binding {
  val: Val;
  ref?: McpRef;
  /** The values a `const` holds when they are known before the code runs (`_literal.ts`). */
  lits?: readonly unknown[];
}

/** A lexical scope; `fn` scopes receive `var` declarations. */
export class Scope {
  readonly vars = new Map<string, Binding>();
  constructor(readonly parent: Scope | null, readonly fn: boolean) {}

  lookup(name: string): Binding | undefined {
    return this.vars.get(name) ?? this.parent?.lookup(name);
  }

  /** The nearest function scope (for `var`). */
  fnScope(): Scope {
    return this.fn || !this.parent ? this : this.parent.fnScope();
  }
}

/** Per-function state: early exits seen so far and their guard, return taint, owning summaries. */
export interface Frame {
  /** Count of `return`/`throw` statements walked so far. */
  exits: number;
  /** Count of `break`/`continue` statements walked so far. */
  jumps: number;
  /** Taint of the conditions under which an earlier statement may have left the function. */
  exitGuard: TSet;
  ret: TSet;
  /** Summaries of the named functions enclosing the current code (they own its tasks). */
  owners: FnInfo[];
  /** True for the code's own function body and arrow functions in it (same `arguments`). */
  top: boolean;
}

/** Walk context; a new object whenever scope, guard or loop changes. */
export interface Ctx {
  scope: Scope;
  /** Taint of the conditions guarding the current code. */
  guard: TSet;
  /** True inside a loop body or an iteration callback. */
  loop: boolean;
  frame: Frame;
}

/** What the walk records. */
export interface State {
  graph: TaskGraph;
  dynamic: DynamicAccess[];
  /** Tool ids in order of first appearance (calls and tool references). */
  tools: Set<string>;
}

export function newState(): State {
  return { graph: new TaskGraph(), dynamic: [], tools: new Set() };
}

export function newFrame(owners: FnInfo[], top: boolean): Frame {
  return { exits: 0, jumps: 0, exitGuard: new Set(), ret: new Set(), owners, top };
}

/** Everything that decides whether the current code runs. */
export function guardOf(ctx: Ctx): TSet {
  return union(ctx.guard, ctx.frame.exitGuard);
}

/** Records an `mcp` use that cannot be resolved. */
export function reportDynamic(state: State, node: Node, reason: string): void {
  state.dynamic.push({ ...posOf(node), reason });
}
