/**
 * The subset of the Babel AST that the analysis reads. Typed loosely on purpose: `@babel/types`
 * is not in the import map, and the walker only needs these fields.
 */
export interface Node {
  type: string;
  loc?: { start: { line: number; column: number } } | null;
  name?: string;
  value?: unknown;
  operator?: string;
  computed?: boolean;
  shorthand?: boolean;
  kind?: string;
  async?: boolean;
  object?: Node;
  property?: Node;
  callee?: Node;
  arguments?: Node[];
  expression?: Node;
  expressions?: Node[];
  quasis?: { value: { cooked?: string | null } }[];
  elements?: (Node | null)[];
  properties?: Node[];
  key?: Node;
  id?: Node | null;
  init?: Node | null;
  declarations?: Node[];
  params?: Node[];
  body?: Node | Node[];
  argument?: Node | null;
  left?: Node;
  right?: Node;
  test?: Node | null;
  update?: Node | null;
  consequent?: Node | Node[] | null;
  alternate?: Node | null;
  discriminant?: Node;
  cases?: Node[];
  block?: Node;
  handler?: Node | null;
  finalizer?: Node | null;
  param?: Node | null;
}

/** 1-based line and column of a node (Babel columns are 0-based). */
export function posOf(node: Node): { line: number; column: number } {
  const start = node.loc?.start;
  return start ? { line: start.line, column: start.column + 1 } : { line: 0, column: 0 };
}

/** Strips TypeScript-only wrappers and parentheses: `(mcp as any)!` → `mcp`. */
export function unwrap(node: Node): Node {
  let n = node;
  while (
    n.type === "TSAsExpression" || n.type === "TSNonNullExpression" ||
    n.type === "TSSatisfiesExpression" || n.type === "TSTypeAssertion" ||
    n.type === "ParenthesizedExpression" || n.type === "TSInstantiationExpression"
  ) n = n.expression!;
  return n;
}

/** True for nodes that define a function with its own `params` and `body`. */
export function isFunction(node: Node): boolean {
  switch (node.type) {
    case "FunctionDeclaration":
    case "FunctionExpression":
    case "ArrowFunctionExpression":
    case "ObjectMethod":
    case "ClassMethod":
    case "ClassPrivateMethod":
      return true;
  }
  return false;
}
