/**
 * Reads a registry module with `@babel/parser` (never runs it): its import specifiers, its
 * exported names, the `mcp.ns.action` tools it calls and its literal `__meta__`.
 *
 * @module
 */
import { babelParser } from "../babel.ts";

/** One place where the module names another module. */
export interface ImportRef {
  /** `static` (`import … from`), `reexport` (`export … from`), `dynamic` (`import()`). */
  readonly kind: "static" | "reexport" | "dynamic";
  /** The specifier; `undefined` for a dynamic `import()` whose argument is not a string literal. */
  readonly specifier?: string;
  /** Offsets of the string literal (quotes included), for rewriting. */
  readonly start?: number;
  readonly end?: number;
  readonly line: number;
}

/** What {@link scanModule} found. */
export interface ModuleScan {
  readonly imports: readonly ImportRef[];
  readonly exports: readonly string[];
  /** Tool ids called as `mcp.ns.action(…)`, sorted. */
  readonly toolsUsed: readonly string[];
  /** True when `mcp` is indexed with a computed key (`mcp[ns]`): the tools are not all known. */
  readonly dynamicMcp: boolean;
  /** The `__meta__` export when it is a literal (strings, numbers, arrays, objects). */
  readonly meta?: Record<string, unknown>;
}

interface N {
  type: string;
  start?: number;
  end?: number;
  loc?: { start: { line: number } };
  [key: string]: unknown;
}

const SKIP = new Set([
  "loc",
  "start",
  "end",
  "extra",
  "leadingComments",
  "trailingComments",
  "innerComments",
]);

/**
 * Parses `code` as a TypeScript module.
 *
 * Rejects with a {@link SyntaxError} when it does not parse.
 */
export async function scanModule(code: string): Promise<ModuleScan> {
  const { parse } = await babelParser();
  let program: N;
  try {
    program = parse(code, { sourceType: "module", plugins: ["typescript"], errorRecovery: false })
      .program as unknown as N;
  } catch (err) {
    throw new SyntaxError(`Cannot parse the module: ${(err as Error).message}`);
  }
  const imports: ImportRef[] = [];
  const exports: string[] = [];
  const tools = new Set<string>();
  let dynamicMcp = false;
  let meta: Record<string, unknown> | undefined;
  const lit = (node: N | undefined | null, kind: ImportRef["kind"], at: N) => {
    const line = at.loc?.start.line ?? 0;
    if (node?.type === "StringLiteral") {
      imports.push({
        kind,
        specifier: node.value as string,
        start: node.start,
        end: node.end,
        line,
      });
    } else if (node?.type === "TemplateLiteral" && (node.expressions as N[]).length === 0) {
      const cooked = (node.quasis as { value: { cooked: string } }[])[0].value.cooked;
      imports.push({ kind, specifier: cooked, start: node.start, end: node.end, line });
    } else {
      imports.push({ kind, line });
    }
  };
  const visit = (node: N): void => {
    switch (node.type) {
      case "ImportDeclaration":
        if (node.importKind !== "type") lit(node.source as N, "static", node);
        return;
      case "ExportAllDeclaration":
        if (node.exportKind !== "type") lit(node.source as N, "reexport", node);
        return;
      case "ExportNamedDeclaration":
        if (node.source && node.exportKind !== "type") lit(node.source as N, "reexport", node);
        collectExports(node, exports, (m) => (meta = m));
        break;
      case "TSImportEqualsDeclaration": {
        const ref = node.moduleReference as N;
        if (ref.type === "TSExternalModuleReference") lit(ref.expression as N, "static", node);
        return;
      }
      case "ImportExpression":
        lit(node.source as N, "dynamic", node);
        break;
      case "CallExpression":
        if ((node.callee as N).type === "Import") lit((node.arguments as N[])[0], "dynamic", node);
        break;
      case "MemberExpression":
      case "OptionalMemberExpression": {
        const obj = node.object as N;
        if (obj.type === "Identifier" && obj.name === "mcp" && node.computed) dynamicMcp = true;
        if (
          (obj.type === "MemberExpression" || obj.type === "OptionalMemberExpression") &&
          (obj.object as N).type === "Identifier" && (obj.object as N).name === "mcp"
        ) {
          if (obj.computed || node.computed) dynamicMcp = true;
          else tools.add(`${(obj.property as N).name}:${(node.property as N).name}`);
        }
        break;
      }
      case "TSImportType":
      case "TSTypeAnnotation":
      case "TSTypeAliasDeclaration":
      case "TSInterfaceDeclaration":
        return;
    }
    for (const [key, value] of Object.entries(node)) {
      if (SKIP.has(key) || !value || typeof value !== "object") continue;
      if (Array.isArray(value)) {
        for (const v of value) {
          if (v && typeof v === "object" && typeof v.type === "string") visit(v);
        }
      } else if (typeof (value as N).type === "string") visit(value as N);
    }
  };
  visit(program);
  return { imports, exports, toolsUsed: [...tools].sort(), dynamicMcp, meta };
}

function collectExports(
  node: N,
  out: string[],
  onMeta: (m: Record<string, unknown>) => void,
): void {
  const decl = node.declaration as N | null;
  if (decl?.type === "FunctionDeclaration" || decl?.type === "ClassDeclaration") {
    out.push((decl.id as N).name as string);
  } else if (decl?.type === "VariableDeclaration") {
    for (const d of decl.declarations as N[]) {
      const id = d.id as N;
      if (id.type !== "Identifier") continue;
      out.push(id.name as string);
      if (id.name === "__meta__") {
        const value = literal(d.init as N | null);
        if (value && typeof value === "object" && !Array.isArray(value)) {
          onMeta(value as Record<string, unknown>);
        }
      }
    }
  }
  for (const s of (node.specifiers as N[] | undefined) ?? []) {
    const e = s.exported as N;
    out.push((e.type === "Identifier" ? e.name : e.value) as string);
  }
}

const NOT_LITERAL = Symbol("not literal");

/** Value of a literal expression; `undefined` when any part is not a literal. */
function literal(node: N | null): unknown {
  const v = lit(node);
  return v === NOT_LITERAL ? undefined : v;
}

function lit(node: N | null): unknown {
  if (!node) return NOT_LITERAL;
  switch (node.type) {
    case "TSAsExpression":
    case "TSSatisfiesExpression":
    case "ParenthesizedExpression":
      return lit(node.expression as N);
    case "StringLiteral":
    case "NumericLiteral":
    case "BooleanLiteral":
      return node.value;
    case "NullLiteral":
      return null;
    case "TemplateLiteral":
      return (node.expressions as N[]).length
        ? NOT_LITERAL
        : (node.quasis as { value: { cooked: string } }[])[0].value.cooked;
    case "UnaryExpression":
      if (node.operator === "-" && (node.argument as N).type === "NumericLiteral") {
        return -((node.argument as N).value as number);
      }
      return NOT_LITERAL;
    case "ArrayExpression": {
      const out: unknown[] = [];
      for (const e of node.elements as (N | null)[]) {
        const v = lit(e);
        if (v === NOT_LITERAL) return NOT_LITERAL;
        out.push(v);
      }
      return out;
    }
    case "ObjectExpression": {
      const out: Record<string, unknown> = {};
      for (const p of node.properties as N[]) {
        if (p.type !== "ObjectProperty" || p.computed) return NOT_LITERAL;
        const k = p.key as N;
        const key = k.type === "Identifier" ? k.name : k.value;
        const v = lit(p.value as N);
        if (v === NOT_LITERAL || typeof key !== "string" && typeof key !== "number") {
          return NOT_LITERAL;
        }
        out[String(key)] = v;
      }
      return out;
    }
  }
  return NOT_LITERAL;
}
