/**
 * Bindings: declarations, parameters and assignment targets, destructuring included. A
 * declaration whose initialiser is part of `mcp` makes an alias (`const fs = mcp.filesystem`,
 * `const { read_file } = mcp.filesystem`); a value declaration carries its initialiser's taint.
 */
import {
  computedReason,
  describeRef,
  type McpRef,
  memberOf,
  resolveRef,
  staticKey,
} from "./_calls.ts";
import { join, newFnInfo, NO_TAINT, NONE, refine, taintWith, type Val } from "./_dataflow.ts";
import { literalsOf } from "./_literal.ts";
import { isFunction, type Node, unwrap } from "./_node.ts";
import { type Ctx, guardOf, reportDynamic, type Scope, type State } from "./_state.ts";
import { visit, walkFunction } from "./_walk.ts";

/** `var`/`let`/`const` declarations. */
export function varDecl(node: Node, ctx: Ctx, st: State): void {
  const scope = node.kind === "var" ? ctx.scope.fnScope() : ctx.scope;
  for (const d of node.declarations ?? []) {
    const init = d.init ? unwrap(d.init) : null;
    if (init) {
      const r = resolveRef(init, ctx.scope, (k) => visit(k, ctx, st));
      if (r?.kind === "dynamic") {
        reportDynamic(st, r.at, r.reason);
        bindPattern(d.id!, NONE, ctx, st, scope);
        continue;
      }
      if (r) {
        bindAlias(d.id!, r, ctx, st, scope);
        continue;
      }
    }
    let v: Val;
    if (init && isFunction(init)) {
      // `const helper = async (x) => …`: a summary that call sites of `helper` apply.
      const fn = newFnInfo();
      v = { t: NO_TAINT, fn };
      if (d.id!.type === "Identifier") scope.vars.set(d.id!.name!, { val: v });
      walkFunction(init, ctx, st, NONE, ctx.loop, fn);
    } else v = visit(init, ctx, st);
    bindPattern(d.id!, taintWith(v, guardOf(ctx)), ctx, st, scope);
    if (node.kind === "const" && init && d.id!.type === "Identifier") {
      const lits = literalsOf(init, ctx.scope);
      if (lits) scope.vars.get(d.id!.name!)!.lits = lits;
    }
  }
}

/** Binds an alias of a part of `mcp`; unresolvable destructuring is reported. */
function bindAlias(pattern: Node, ref: McpRef, ctx: Ctx, st: State, scope: Scope): void {
  const p = unwrap(pattern);
  if (p.type === "Identifier") {
    scope.vars.set(p.name!, { val: NONE, ref });
    return;
  }
  if (p.type === "AssignmentPattern") {
    visit(p.right, ctx, st);
    bindAlias(p.left!, ref, ctx, st, scope);
    return;
  }
  if (p.type !== "ObjectPattern") {
    reportDynamic(st, p, `destructuring of "${describeRef(ref)}" with a ${p.type}`);
    bindPattern(p, NONE, ctx, st, scope);
    return;
  }
  for (const prop of p.properties ?? []) {
    if (prop.type === "RestElement") {
      reportDynamic(st, prop, `rest element in destructuring of "${describeRef(ref)}"`);
      bindPattern(prop.argument!, NONE, ctx, st, scope);
      continue;
    }
    const key = staticKey(prop.key!, prop.computed);
    if (key === undefined) {
      visit(prop.key, ctx, st);
      reportDynamic(st, prop, computedReason(ref));
      bindPattern(prop.value as Node, NONE, ctx, st, scope);
      continue;
    }
    const sub = memberOf(ref, key, prop);
    if (sub.kind === "dynamic") {
      reportDynamic(st, sub.at, sub.reason);
      bindPattern(prop.value as Node, NONE, ctx, st, scope);
    } else bindAlias(prop.value as Node, sub, ctx, st, scope);
  }
}

/**
 * Binds `pattern` to `v`: declares into `scope`, or assigns existing bindings when `scope` is
 * `null`. Destructuring refines `v` per property or element.
 */
export function bindPattern(
  pattern: Node,
  v: Val,
  ctx: Ctx,
  st: State,
  scope: Scope | null,
): void {
  const p = unwrap(pattern);
  switch (p.type) {
    case "Identifier":
      if (scope) scope.vars.set(p.name!, { val: v });
      else assignName(p, v, ctx, st);
      return;
    case "AssignmentPattern":
      bindPattern(p.left!, join(v, visit(p.right, ctx, st)), ctx, st, scope);
      return;
    case "RestElement":
      bindPattern(p.argument!, { t: v.t }, ctx, st, scope);
      return;
    case "ObjectPattern":
      for (const prop of p.properties ?? []) {
        if (prop.type === "RestElement") {
          bindPattern(prop, v, ctx, st, scope);
          continue;
        }
        const key = staticKey(prop.key!, prop.computed);
        if (key === undefined) visit(prop.key, ctx, st);
        bindPattern(prop.value as Node, refine(v, key), ctx, st, scope);
      }
      return;
    case "ArrayPattern": {
      const els = p.elements ?? [];
      for (let i = 0; i < els.length; i++) {
        const el = els[i];
        if (el) {
          bindPattern(el, el.type === "RestElement" ? v : refine(v, String(i)), ctx, st, scope);
        }
      }
      return;
    }
    case "MemberExpression":
    case "OptionalMemberExpression":
      assignMember(p, v, ctx, st);
      return;
  }
}

/** `name = v`: reassigning `mcp` or an alias is reported; a value binding accumulates taint. */
function assignName(id: Node, v: Val, ctx: Ctx, st: State): void {
  const b = ctx.scope.lookup(id.name!);
  if (b?.ref) {
    reportDynamic(st, id, `alias "${id.name}" of "${describeRef(b.ref)}" is reassigned`);
  } else if (b) {
    b.val = join(b.val, v);
    b.lits = undefined; // no longer known before the code runs
  } else if (id.name === "mcp") {
    reportDynamic(st, id, `"mcp" is reassigned`);
  }
}

/** `obj.x = v`: mutating `mcp` is reported; a local object accumulates the taint. */
function assignMember(target: Node, v: Val, ctx: Ctx, st: State): void {
  const r = resolveRef(target.object!, ctx.scope, (k) => visit(k, ctx, st));
  if (r) {
    const reason = r.kind === "dynamic"
      ? r.reason
      : `assignment to a property of "${describeRef(r)}"`;
    reportDynamic(st, target, reason);
    return;
  }
  if (target.computed) visit(target.property, ctx, st);
  taintRoot(target.object!, v, ctx, st, true);
}

/**
 * Adds `v`'s taint to the local variable at the root of `expr` (`a` in `a.b[c].d`); `visitKeys`
 * walks computed keys on the way when `expr` has not been visited yet.
 */
export function taintRoot(expr: Node, v: Val, ctx: Ctx, st: State, visitKeys: boolean): void {
  let n = unwrap(expr);
  while (n.type === "MemberExpression" || n.type === "OptionalMemberExpression") {
    if (visitKeys && n.computed) visit(n.property, ctx, st);
    n = unwrap(n.object!);
  }
  if (n.type !== "Identifier" || v.t.size === 0) return;
  const b = ctx.scope.lookup(n.name!);
  if (b && !b.ref) b.val = join(b.val, v);
}
