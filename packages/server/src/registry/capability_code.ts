/**
 * Checks published capability code before it is stored: it must parse as a TypeScript module
 * (`@babel/parser`) and export a function named after the action (the module contract, DESIGN §7).
 *
 * @module
 */
import { parse } from "@babel/parser";

/**
 * @throws {SyntaxError} when `code` does not parse as a TypeScript module.
 * @throws {TypeError} when no export named `action` exists.
 */
export function checkCapabilityCode(code: string, action: string): void {
  let program;
  try {
    program = parse(code, { sourceType: "module", plugins: ["typescript"] }).program;
  } catch (error) {
    throw new SyntaxError(`Cannot parse capability code: ${(error as Error).message}`);
  }
  for (const node of program.body) {
    if (node.type !== "ExportNamedDeclaration") continue;
    const declaration = node.declaration;
    if (declaration?.type === "FunctionDeclaration" && declaration.id?.name === action) return;
    if (
      declaration?.type === "VariableDeclaration" &&
      declaration.declarations.some((d) => d.id.type === "Identifier" && d.id.name === action)
    ) return;
    for (const specifier of node.specifiers) {
      const exported = specifier.exported;
      const name = exported.type === "Identifier" ? exported.name : exported.value;
      if (name === action) return;
    }
  }
  throw new TypeError(
    `Capability code exports no function "${action}": write \`export async function ${action}(args, { mcp }) { … }\``,
  );
}
