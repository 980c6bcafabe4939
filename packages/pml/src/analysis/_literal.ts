/**
 * Values of expressions known before the code runs (`{ path: "a.txt", head: 5 }`, or `{ path }`
 * where `const path = "a.txt"`), as the JSON the sandbox would send for them. Anything that needs
 * the code to run (calls, spreads, methods, names that may change) or that JSON would change
 * (`undefined`, `NaN`, `-0`, a `__proto__` key) is not known.
 */
import { type Node, unwrap } from "./_node.ts";
import { staticKey } from "./_calls.ts";
import type { Scope } from "./_state.ts";

/** The most values an expression may be known to take (a literal array looped over, …). */
export const MAX_CHOICES = 16;

/**
 * Every value `node` can take, when each is known before the code runs: a literal, a `const` name
 * bound to one (`Binding.lits` in `scope`), an element of a literal array a `for … of` loops over
 * or an array method's callback runs over (`files.map((f) => …)`), and objects, arrays and template
 * strings made of those. `undefined` when any part is computed, or when there would be more than
 * {@link MAX_CHOICES}.
 */
export function literalsOf(node: Node, scope: Scope): unknown[] | undefined {
  const n = unwrap(node);
  switch (n.type) {
    case "StringLiteral":
    case "BooleanLiteral":
      return [n.value];
    case "NullLiteral":
      return [null];
    case "NumericLiteral":
      return number(n.value as number);
    case "UnaryExpression": {
      const arg = n.argument && unwrap(n.argument);
      return n.operator === "-" && arg?.type === "NumericLiteral"
        ? number(-(arg.value as number))
        : undefined;
    }
    case "Identifier":
      return scope.lookup(n.name!)?.lits?.slice();
    case "TemplateLiteral": {
      let out: unknown[] = [n.quasis![0].value.cooked];
      for (let i = 0; i < n.expressions!.length; i++) {
        const parts = literalsOf(n.expressions![i], scope);
        const cooked = n.quasis![i + 1].value.cooked;
        if (!parts || !parts.every(isPrimitive) || typeof cooked !== "string") return undefined;
        out = product(out, parts, (a, b) => `${a}${b}${cooked}`);
        if (!out.length) return undefined;
      }
      return out.every((v) => typeof v === "string") ? out : undefined;
    }
    case "ArrayExpression": {
      let out: unknown[] = [[]];
      for (const el of n.elements!) {
        const vals = el && el.type !== "SpreadElement" ? literalsOf(el, scope) : undefined;
        if (!vals) return undefined;
        out = product(out, vals, (a, b) => [...(a as unknown[]), b]);
        if (!out.length) return undefined;
      }
      return out;
    }
    case "ObjectExpression": {
      let out: unknown[] = [{}];
      const seen = new Set<string>();
      for (const p of n.properties!) {
        if (p.type !== "ObjectProperty") return undefined;
        const key = staticKey(p.key!, p.computed);
        // `{ path }` is `{ path: path }`.
        const vals = p.value ? literalsOf(p.value as Node, scope) : undefined;
        if (key === undefined || key === "__proto__" || seen.has(key) || !vals) return undefined;
        seen.add(key);
        out = product(out, vals, (a, b) => ({ ...(a as object), [key]: b }));
        if (!out.length) return undefined;
      }
      return out;
    }
    default:
      return undefined;
  }
}

/**
 * The elements of the one array `node` is known to be (`["a", "b"]`, or a `const` bound to it),
 * when it has at least one and at most {@link MAX_CHOICES}: what a `for … of` over it or a callback
 * of its `map` takes, one at a time.
 */
export function elementsOf(node: Node, scope: Scope): unknown[] | undefined {
  const lists = literalsOf(node, scope);
  const list = lists?.length === 1 ? lists[0] : undefined;
  return Array.isArray(list) && list.length && list.length <= MAX_CHOICES ? list : undefined;
}

function number(v: number): unknown[] | undefined {
  return Number.isFinite(v) && !Object.is(v, -0) ? [v] : undefined;
}

function isPrimitive(v: unknown): boolean {
  return v === null || ["string", "number", "boolean"].includes(typeof v);
}

/** Each of `as` combined with each of `bs`; empty when there would be more than MAX_CHOICES. */
function product(as: unknown[], bs: readonly unknown[], f: (a: unknown, b: unknown) => unknown) {
  if (as.length * bs.length > MAX_CHOICES) return [];
  return as.flatMap((a) => bs.map((b) => f(a, b)));
}
