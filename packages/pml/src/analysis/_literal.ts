/**
 * The value of an expression written entirely as a literal (`{ path: "a.txt", head: 5 }`), as the
 * JSON the sandbox would send for it; `undefined` for anything that needs the code to run
 * (variables, calls, spreads, interpolations, methods) or that JSON would change (`undefined`,
 * `NaN`, `-0`, a `__proto__` key).
 */
import { type Node, unwrap } from "./_node.ts";
import { staticKey } from "./_calls.ts";

/** A literal's value, boxed so that `null` is a value too. */
export type Literal = { readonly value: unknown };

export function literalOf(node: Node): Literal | undefined {
  const n = unwrap(node);
  switch (n.type) {
    case "StringLiteral":
    case "BooleanLiteral":
      return { value: n.value };
    case "NullLiteral":
      return { value: null };
    case "NumericLiteral":
      return number(n.value as number);
    case "UnaryExpression": {
      const arg = n.argument && unwrap(n.argument);
      return n.operator === "-" && arg?.type === "NumericLiteral"
        ? number(-(arg.value as number))
        : undefined;
    }
    case "TemplateLiteral": {
      const cooked = n.expressions!.length === 0 ? n.quasis![0].value.cooked : undefined;
      return typeof cooked === "string" ? { value: cooked } : undefined;
    }
    case "ArrayExpression": {
      const out: unknown[] = [];
      for (const el of n.elements!) {
        const lit = el && el.type !== "SpreadElement" ? literalOf(el) : undefined;
        if (!lit) return undefined;
        out.push(lit.value);
      }
      return { value: out };
    }
    case "ObjectExpression": {
      const out: Record<string, unknown> = {};
      for (const p of n.properties!) {
        if (p.type !== "ObjectProperty" || p.shorthand) return undefined;
        const key = staticKey(p.key!, p.computed);
        const lit = p.value ? literalOf(p.value as Node) : undefined;
        if (key === undefined || key === "__proto__" || !lit || Object.hasOwn(out, key)) {
          return undefined;
        }
        out[key] = lit.value;
      }
      return { value: out };
    }
    default:
      return undefined;
  }
}

function number(v: number): Literal | undefined {
  return Number.isFinite(v) && !Object.is(v, -0) ? { value: v } : undefined;
}
