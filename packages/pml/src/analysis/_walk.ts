/**
 * The single traversal of the analysis: one recursive `visit` over the Babel AST that resolves
 * `mcp` calls and propagates taint at the same time (no `@babel/traverse`). Statements and
 * functions live here; expressions in `_expr.ts`, bindings in `_patterns.ts`.
 */
import { type FnInfo, newFnInfo, NO_TAINT, NONE, type TSet, union, type Val } from "./_dataflow.ts";
import {
  array,
  assign,
  call,
  conditional,
  identifier,
  logical,
  member,
  object,
  unary,
} from "./_expr.ts";
import { elementsOf } from "./_literal.ts";
import { type Node, unwrap } from "./_node.ts";
import { bindPattern, varDecl } from "./_patterns.ts";
import { type Ctx, guardOf, newFrame, Scope, type State } from "./_state.ts";

const SKIP_KEYS = new Set([
  "type",
  "loc",
  "start",
  "end",
  "extra",
  "range",
  "leadingComments",
  "trailingComments",
  "innerComments",
  "typeAnnotation",
  "returnType",
  "typeParameters",
  "typeArguments",
  "label",
]);

/** TypeScript nodes that hold runtime code; every other `TS*` node is type-only and skipped. */
const TS_VALUE = new Set([
  "TSEnumDeclaration",
  "TSEnumBody",
  "TSEnumMember",
  "TSModuleDeclaration",
  "TSModuleBlock",
  "TSExportAssignment",
]);

/** Walks the function body `program` of `pml:execute` code. */
export function walkProgram(program: Node, st: State): void {
  const ctx: Ctx = {
    scope: new Scope(null, true),
    guard: NO_TAINT,
    loop: false,
    frame: newFrame([], true),
  };
  statements(program.body as Node[], ctx, st);
}

/** Visits any node; returns the abstract value of expressions (`NONE` for statements). */
export function visit(node: Node | null | undefined, ctx: Ctx, st: State): Val {
  if (!node) return NONE;
  switch (node.type) {
    case "StringLiteral":
    case "NumericLiteral":
    case "BooleanLiteral":
    case "NullLiteral":
    case "RegExpLiteral":
    case "BigIntLiteral":
    case "ThisExpression":
    case "Super":
    case "MetaProperty":
    case "PrivateName":
    case "EmptyStatement":
    case "DebuggerStatement":
      return NONE;
    case "Identifier":
      return identifier(node, ctx, st);
    case "MemberExpression":
    case "OptionalMemberExpression":
      return member(node, ctx, st);
    case "CallExpression":
    case "OptionalCallExpression":
    case "NewExpression":
      return call(node, ctx, st);
    case "AwaitExpression":
    case "YieldExpression":
      return visit(node.argument, ctx, st);
    case "TSAsExpression":
    case "TSSatisfiesExpression":
    case "TSNonNullExpression":
    case "TSTypeAssertion":
    case "TSInstantiationExpression":
    case "ParenthesizedExpression":
    case "ExpressionStatement":
      return visit(node.expression, ctx, st);
    case "AssignmentExpression":
      return assign(node, ctx, st);
    case "LogicalExpression":
      return logical(node, ctx, st);
    case "ConditionalExpression":
      return conditional(node, ctx, st);
    case "UnaryExpression":
      return unary(node, ctx, st);
    case "ArrayExpression":
      return array(node, ctx, st);
    case "ObjectExpression":
      return object(node, ctx, st);
    case "FunctionExpression":
    case "ArrowFunctionExpression":
    case "ObjectMethod":
    case "ClassMethod":
    case "ClassPrivateMethod":
      return functionValue(node, ctx, st);
    case "FunctionDeclaration": {
      const fn = node.id && ctx.scope.lookup(node.id.name!)?.val.fn;
      if (fn) fn.lazy?.(); // walked now unless an earlier call already did
      else walkFunction(node, ctx, st, NONE, ctx.loop, newFnInfo());
      return NONE;
    }
    case "VariableDeclaration":
      varDecl(node, ctx, st);
      return NONE;
    case "BlockStatement":
    case "StaticBlock":
      statements(node.body as Node[], { ...ctx, scope: new Scope(ctx.scope, false) }, st);
      return NONE;
    case "ReturnStatement": {
      const v = visit(node.argument, ctx, st);
      ctx.frame.ret = union(ctx.frame.ret, v.t);
      ctx.frame.exits++;
      return NONE;
    }
    case "ThrowStatement":
      visit(node.argument, ctx, st);
      ctx.frame.exits++;
      return NONE;
    case "BreakStatement":
    case "ContinueStatement":
      ctx.frame.jumps++;
      return NONE;
    case "IfStatement":
      return ifStatement(node, ctx, st);
    case "SwitchStatement":
      return switchStatement(node, ctx, st);
    case "ForStatement":
    case "WhileStatement":
    case "DoWhileStatement":
    case "ForOfStatement":
    case "ForInStatement":
      return loop(node, ctx, st);
    case "TryStatement":
      return tryStatement(node, ctx, st);
  }
  return generic(node, ctx, st);
}

/** Any other node: visit every child, the value carries the union of their taints. */
function generic(node: Node, ctx: Ctx, st: State): Val {
  if (node.type.startsWith("TS") && !TS_VALUE.has(node.type)) return NONE;
  const rec = node as unknown as Record<string, unknown>;
  let t = NO_TAINT;
  for (const key in rec) {
    if (SKIP_KEYS.has(key)) continue;
    if ((key === "key" || key === "property") && !node.computed) continue;
    const v = rec[key];
    if (v === null || typeof v !== "object") continue;
    if (Array.isArray(v)) {
      for (const c of v) if (c && typeof c.type === "string") t = union(t, visit(c, ctx, st).t);
    } else if (typeof (v as Node).type === "string") {
      t = union(t, visit(v as Node, ctx, st).t);
    }
  }
  return t.size > 0 ? { t } : NONE;
}

/**
 * A statement list. Function declarations are hoisted: each is walked in place, or at its first
 * call if that comes earlier, with the bindings that exist at that point.
 */
export function statements(list: Node[], ctx: Ctx, st: State): void {
  for (const s of list) {
    if (s.type === "FunctionDeclaration" && s.id) {
      const fn = newFnInfo();
      fn.lazy = () => {
        fn.lazy = undefined;
        walkFunction(s, ctx, st, NONE, ctx.loop, fn);
      };
      ctx.scope.vars.set(s.id.name!, { val: { t: NO_TAINT, fn } });
    }
  }
  for (const s of list) visit(s, ctx, st);
}

/** A function in value position: walked once, in place, as a summary for its call sites. */
function functionValue(node: Node, ctx: Ctx, st: State): Val {
  const fn = newFnInfo();
  walkFunction(node, ctx, st, NONE, ctx.loop, fn);
  return { t: NO_TAINT, fn };
}

/**
 * Walks a function: `params` gives the parameter values (one per index, or one for all),
 * `summary` (if any) receives the tasks of the body and its return taint. `firstLits`: the values
 * the first parameter is known to take (the elements a `map` callback runs over). Returns the
 * return taint.
 */
export function walkFunction(
  node: Node,
  ctx: Ctx,
  st: State,
  params: Val | Val[],
  inLoop: boolean,
  summary: FnInfo | null,
  firstLits?: readonly unknown[],
): TSet {
  const scope = new Scope(ctx.scope, true);
  const frame = newFrame(
    summary ? [...ctx.frame.owners, summary] : ctx.frame.owners,
    ctx.frame.top && node.type === "ArrowFunctionExpression",
  );
  const inner: Ctx = { scope, guard: guardOf(ctx), loop: inLoop, frame };
  const list = node.params ?? [];
  for (let i = 0; i < list.length; i++) {
    const p = list[i].type === "TSParameterProperty"
      ? (list[i] as { parameter?: Node }).parameter!
      : list[i];
    const v = Array.isArray(params) ? (params[i] ?? NONE) : params;
    bindPattern(p, v, inner, st, scope);
    if (i === 0 && firstLits && unwrap(p).type === "Identifier") {
      scope.vars.get(unwrap(p).name!)!.lits = firstLits;
    }
  }
  const body = node.body as Node | undefined;
  if (body?.type === "BlockStatement") statements(body.body as Node[], inner, st);
  else if (body) frame.ret = union(frame.ret, visit(body, inner, st).t);
  if (summary) {
    summary.ret = union(summary.ret, frame.ret);
    st.graph.finish(summary);
  }
  return frame.ret;
}

function ifStatement(node: Node, ctx: Ctx, st: State): Val {
  const test = visit(node.test, ctx, st).t;
  const inner = { ...ctx, guard: union(ctx.guard, test) };
  const { exits, jumps } = ctx.frame;
  visit(node.consequent as Node, inner, st);
  visit(node.alternate, inner, st);
  // An early `return`/`throw`/`break` makes the code after the `if` depend on its test.
  if (ctx.frame.exits !== exits || ctx.frame.jumps !== jumps) {
    ctx.frame.exitGuard = union(ctx.frame.exitGuard, test);
  }
  return NONE;
}

function switchStatement(node: Node, ctx: Ctx, st: State): Val {
  let guard = union(ctx.guard, visit(node.discriminant, ctx, st).t);
  const inner: Ctx = { ...ctx, scope: new Scope(ctx.scope, false) };
  const saved = ctx.frame.exitGuard;
  const exits = ctx.frame.exits;
  for (const c of node.cases ?? []) {
    guard = union(guard, visit(c.test, { ...inner, guard }, st).t);
    statements(c.consequent as Node[], { ...inner, guard }, st);
  }
  if (ctx.frame.exits === exits) ctx.frame.exitGuard = saved; // `break`s end at the switch
  return NONE;
}

function loop(node: Node, ctx: Ctx, st: State): Val {
  const scope = new Scope(ctx.scope, false);
  const saved = ctx.frame.exitGuard;
  const exits = ctx.frame.exits;
  const outer: Ctx = { ...ctx, scope };
  const inLoop: Ctx = { ...outer, loop: true };
  if (node.type === "ForOfStatement" || node.type === "ForInStatement") {
    // The iterable is evaluated once; each element carries its taint, and so does the body.
    const items = visit(node.right, outer, st).t;
    const elem: Val = { t: union(items, guardOf(ctx)) };
    const left = node.left!;
    if (left.type === "VariableDeclaration") {
      const id = left.declarations![0].id!;
      bindPattern(id, elem, outer, st, scope);
      // `for (const f of ["a", "b"])`: `f` is one of the elements.
      if (node.type === "ForOfStatement" && left.kind === "const" && id.type === "Identifier") {
        const list = elementsOf(node.right!, ctx.scope);
        if (list) scope.vars.get(id.name!)!.lits = list;
      }
    } else bindPattern(left, elem, outer, st, null);
    visit(node.body as Node, { ...inLoop, guard: union(ctx.guard, items) }, st);
  } else if (node.type === "DoWhileStatement") {
    visit(node.body as Node, inLoop, st);
    visit(node.test, inLoop, st);
  } else {
    visit(node.init as Node | null, outer, st);
    const test = visit(node.test, inLoop, st).t;
    const body: Ctx = { ...inLoop, guard: union(ctx.guard, test) };
    visit(node.body as Node, body, st);
    visit(node.update, body, st);
  }
  if (ctx.frame.exits === exits) ctx.frame.exitGuard = saved; // `break`s end at the loop
  return NONE;
}

function tryStatement(node: Node, ctx: Ctx, st: State): Val {
  const first = st.graph.tasks.length;
  visit(node.block, ctx, st);
  const handler = node.handler;
  if (handler) {
    // The handler runs because something in the block failed: it depends on the block's tasks.
    const failed: TSet = new Set(st.graph.tasks.slice(first).map((t) => t.id));
    const scope = new Scope(ctx.scope, false);
    const inner: Ctx = { ...ctx, scope, guard: union(ctx.guard, failed) };
    if (handler.param) bindPattern(handler.param, { t: failed }, inner, st, scope);
    visit(handler.body as Node, inner, st);
  }
  visit(node.finalizer, ctx, st);
  return NONE;
}
