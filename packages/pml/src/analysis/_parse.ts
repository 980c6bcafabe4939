/** Parsing of `pml:execute` code (a TypeScript function body) with `@babel/parser`. */
import type { ParserOptions } from "@babel/parser";
import { babelParser } from "../babel.ts";
import type { Node } from "./_node.ts";
import type { AnalysisError } from "./types.ts";

const OPTIONS: ParserOptions = {
  sourceType: "module",
  plugins: ["typescript"],
  allowReturnOutsideFunction: true,
  allowAwaitOutsideFunction: true,
  errorRecovery: false,
  attachComment: false,
};

/** The program node of `code`, or a `SYNTAX_ERROR` with a 1-based position. */
export async function parseBody(
  code: string,
): Promise<{ program: Node } | { error: AnalysisError }> {
  const { parse } = await babelParser();
  let program: Node;
  try {
    program = parse(code, OPTIONS).program as unknown as Node;
  } catch (err) {
    const loc = (err as { loc?: { line: number; column: number } }).loc;
    const raw = err instanceof Error ? err.message : String(err);
    const reason = raw.replace(/ \(\d+:\d+\)$/, "");
    return {
      error: loc
        ? {
          code: "SYNTAX_ERROR",
          message: `Cannot parse code: ${reason} at line ${loc.line}, column ${loc.column + 1}`,
          line: loc.line,
          column: loc.column + 1,
        }
        : { code: "SYNTAX_ERROR", message: `Cannot parse code: ${reason}` },
    };
  }
  // The code runs as a function body, where module declarations are not allowed.
  for (const s of program.body as Node[]) {
    if (s.type.startsWith("Import") || s.type.startsWith("Export")) {
      const start = s.loc?.start ?? { line: 0, column: 0 };
      return {
        error: {
          code: "SYNTAX_ERROR",
          message: `Cannot parse code: "${
            s.type.startsWith("Import") ? "import" : "export"
          }" declarations are not allowed in a function body at line ${start.line}, column ${
            start.column + 1
          }`,
          line: start.line,
          column: start.column + 1,
        },
      };
    }
  }
  return { program };
}
