/**
 * Expressions: tool calls become tasks, other expressions propagate taint. A part of `mcp`
 * reached anywhere but as a callee, a member object or an alias initialiser "escapes" and is
 * reported as dynamic, since its calls can no longer be followed.
 */
import {
  describeRef,
  type McpRef,
  type Resolved,
  resolveRef,
  staticKey,
  toolIdOf,
} from "./_calls.ts";
import {
  join,
  NO_TAINT,
  NONE,
  refine,
  taintWith,
  type TSet,
  union,
  type Val,
} from "./_dataflow.ts";
import { elementsOf, literalsOf } from "./_literal.ts";
import { isFunction, type Node, posOf, unwrap } from "./_node.ts";
import { bindPattern, taintRoot } from "./_patterns.ts";
import { type Ctx, guardOf, reportDynamic, type State } from "./_state.ts";
import { visit, walkFunction } from "./_walk.ts";

/** Array methods whose callback takes an element of the receiver as its first parameter. */
const ELEMENT_FIRST = new Set([
  "map",
  "forEach",
  "filter",
  "flatMap",
  "some",
  "every",
  "find",
  "findIndex",
  "findLast",
  "findLastIndex",
]);

/** Methods whose callback may run once per element: tasks inside are `inLoop`. */
const ITERATION = new Set([
  ...ELEMENT_FIRST,
  "reduce",
  "reduceRight",
  "sort",
  "toSorted",
  "from",
  "fromAsync",
]);

/** `Promise` combinators whose result keeps one value per input element. */
const COMBINATORS = new Set(["all", "allSettled"]);

const ROOT: McpRef = { kind: "root" };

/** Reports a part of `mcp` used as a plain value (or an unresolvable access). */
function useRef(r: Exclude<Resolved, null>, node: Node, st: State): void {
  if (r.kind === "dynamic") return reportDynamic(st, r.at, r.reason);
  if (r.kind === "tool") {
    const id = toolIdOf(r, node);
    if (typeof id === "string") {
      st.tools.add(id);
      return reportDynamic(st, node, `tool "${id}" is used as a value, not called`);
    }
    return reportDynamic(st, id.at, id.reason);
  }
  reportDynamic(st, node, `"${describeRef(r)}" is used as a value, its calls cannot be followed`);
}

export function identifier(node: Node, ctx: Ctx, st: State): Val {
  const b = ctx.scope.lookup(node.name!);
  if (b) {
    if (!b.ref) return b.val;
    useRef(b.ref, node, st);
  } else if (node.name === "mcp") useRef(ROOT, node, st);
  else if (node.name === "arguments" && ctx.frame.top) {
    // The code runs as a function body: its own `arguments` may hold `mcp`.
    reportDynamic(st, node, `"arguments" of the code's function may hold "mcp"`);
  }
  return NONE;
}

export function member(node: Node, ctx: Ctx, st: State): Val {
  const r = resolveRef(node, ctx.scope, (k) => visit(k, ctx, st));
  if (r) {
    useRef(r, node, st);
    return NONE;
  }
  const obj = visit(node.object!, ctx, st);
  const key = staticKey(node.property!, node.computed);
  if (key === undefined && node.computed) return join(obj, visit(node.property!, ctx, st));
  return refine(obj, key);
}

/** Visits call arguments; returns their union taint. */
function args(node: Node, ctx: Ctx, st: State): TSet {
  let t = NO_TAINT;
  for (const a of node.arguments ?? []) t = union(t, visit(a, ctx, st).t);
  return t;
}

/** A call whose callee is part of `mcp`: a task, or a reported dynamic form. */
function callMcp(node: Node, r: Exclude<Resolved, null>, ctx: Ctx, st: State): Val {
  const argT = args(node, ctx, st);
  if (r.kind === "dynamic") {
    reportDynamic(st, r.at, r.reason);
    return { t: argT };
  }
  if (r.kind !== "tool") {
    reportDynamic(
      st,
      node,
      `"${describeRef(r)}" is called itself; expected mcp.namespace.action()`,
    );
    return { t: argT };
  }
  const id = toolIdOf(r, node);
  if (typeof id !== "string") {
    reportDynamic(st, id.at, id.reason);
    return { t: argT };
  }
  if (node.type === "NewExpression") {
    reportDynamic(st, node, `tool "${id}" is called with "new"`);
    return { t: argT };
  }
  st.tools.add(id);
  const { line, column } = posOf(node);
  const task = st.graph.add(
    id,
    line,
    column,
    union(argT, guardOf(ctx)),
    ctx.loop,
    literalArgs(node, ctx),
  );
  for (const owner of ctx.frame.owners) owner.tasks.push(task);
  return { t: new Set([task.id]) };
}

/** The arguments `mcp.ns.action({ … })` can have, when each is known before the code runs. */
function literalArgs(node: Node, ctx: Ctx): Record<string, unknown>[] | undefined {
  const [arg, ...more] = node.arguments ?? [];
  const values = arg && !more.length ? literalsOf(arg, ctx.scope) : undefined;
  return values?.every((v) => v !== null && typeof v === "object" && !Array.isArray(v))
    ? values as Record<string, unknown>[]
    : undefined;
}

export function call(node: Node, ctx: Ctx, st: State): Val {
  const callee = unwrap(node.callee!);
  const r = resolveRef(callee, ctx.scope, (k) => visit(k, ctx, st));
  if (r) return callMcp(node, r, ctx, st);
  const guard = guardOf(ctx);
  if (
    callee.type === "Identifier" && (callee.name === "eval" || callee.name === "Function") &&
    !ctx.scope.lookup(callee.name)
  ) reportDynamic(st, node, `"${callee.name}" runs code that the analysis cannot see`);
  if (isFunction(callee)) {
    // (async (x) => { … })(v): parameters take the arguments' values.
    const vals = (node.arguments ?? []).map((a) => taintWith(visit(a, ctx, st), guard));
    const ret = walkFunction(callee, ctx, st, vals, ctx.loop, null);
    return { t: vals.reduce((t, v) => union(t, v.t), ret) };
  }
  let recv = NONE;
  let method: string | undefined;
  let fnVal: Val;
  const isMember = callee.type === "MemberExpression" || callee.type === "OptionalMemberExpression";
  if (isMember) {
    recv = visit(callee.object!, ctx, st);
    method = staticKey(callee.property!, callee.computed);
    if (method === undefined && callee.computed) {
      recv = join(recv, visit(callee.property!, ctx, st));
    }
    fnVal = refine(recv, method);
  } else fnVal = visit(callee, ctx, st);

  const iter = ctx.loop || (method !== undefined && ITERATION.has(method));
  let argT = NO_TAINT;
  const vals: Val[] = [];
  const fns: Node[] = [];
  for (const a of node.arguments ?? []) {
    const u = unwrap(a);
    if (isFunction(u)) fns.push(u);
    else {
      const v = visit(a, ctx, st);
      vals.push(v);
      argT = union(argT, v.t);
    }
  }
  // Callbacks receive the receiver's and the other arguments' values (`files.map((f) => …)`); the
  // first callback of `map` and the like takes the receiver's elements, when those are known.
  const input = union(recv.t, argT);
  const first = node.arguments?.[0] && unwrap(node.arguments[0]);
  const elements = isMember && method !== undefined && ELEMENT_FIRST.has(method)
    ? elementsOf(callee.object!, ctx.scope)
    : undefined;
  let out = input;
  for (const f of fns) {
    const lits = f === first ? elements : undefined;
    out = union(out, walkFunction(f, ctx, st, { t: input }, iter, null, lits));
  }
  for (const v of vals) {
    if (!v.fn) continue;
    v.fn.lazy?.();
    st.graph.applyCall(v.fn, union(input, guard), iter);
    out = union(out, v.fn.ret);
  }
  if (fnVal.fn) {
    fnVal.fn.lazy?.();
    st.graph.applyCall(fnVal.fn, union(argT, guard), ctx.loop);
    out = union(out, fnVal.fn.ret);
  }
  // `results.push(x)` and the like: the receiver now carries the arguments.
  if (isMember && argT.size > 0) taintRoot(callee.object!, { t: argT }, ctx, st, false);
  if (
    isMember && method !== undefined && COMBINATORS.has(method) && fns.length === 0 &&
    vals.length === 1 && vals[0].elems && isFree(callee.object!, "Promise", ctx)
  ) return { t: out, elems: vals[0].elems };
  return out.size > 0 ? { t: out } : NONE;
}

function isFree(node: Node, name: string, ctx: Ctx): boolean {
  const n = unwrap(node);
  return n.type === "Identifier" && n.name === name && !ctx.scope.lookup(name);
}

export function assign(node: Node, ctx: Ctx, st: State): Val {
  const v = visit(node.right!, ctx, st);
  bindPattern(node.left!, taintWith(v, guardOf(ctx)), ctx, st, null);
  return v;
}

export function logical(node: Node, ctx: Ctx, st: State): Val {
  const left = visit(node.left!, ctx, st).t;
  const right = visit(node.right!, { ...ctx, guard: union(ctx.guard, left) }, st).t;
  return { t: union(left, right) };
}

export function conditional(node: Node, ctx: Ctx, st: State): Val {
  const test = visit(node.test, ctx, st).t;
  const inner = { ...ctx, guard: union(ctx.guard, test) };
  const a = visit(node.consequent as Node, inner, st).t;
  const b = visit(node.alternate, inner, st).t;
  return { t: union(test, union(a, b)) };
}

export function unary(node: Node, ctx: Ctx, st: State): Val {
  // `typeof mcp.fs.read_file` only inspects the proxy.
  if (node.operator === "typeof" && resolveRef(node.argument!, ctx.scope, () => {})) return NONE;
  return { t: visit(node.argument, ctx, st).t };
}

export function array(node: Node, ctx: Ctx, st: State): Val {
  let t = NO_TAINT;
  const elems: Val[] = [];
  let exact = true;
  for (const e of node.elements ?? []) {
    if (!e) {
      elems.push(NONE);
      continue;
    }
    if (e.type === "SpreadElement") exact = false;
    const v = visit(e, ctx, st);
    elems.push(v);
    t = union(t, v.t);
  }
  return exact ? { t, elems } : { t };
}

export function object(node: Node, ctx: Ctx, st: State): Val {
  let t = NO_TAINT;
  const props = new Map<string, Val>();
  for (const p of node.properties ?? []) {
    if (p.type === "SpreadElement") {
      t = union(t, visit(p.argument, ctx, st).t);
      continue;
    }
    const key = staticKey(p.key!, p.computed);
    if (key === undefined) t = union(t, visit(p.key, ctx, st).t);
    const v = visit(p.type === "ObjectMethod" ? p : p.value as Node, ctx, st);
    t = union(t, v.t);
    if (key !== undefined) props.set(key, v);
  }
  return { t, props };
}
