/**
 * What the question about a std write also says (`StdTarget.preflight`): where each path argument
 * that goes through a symlink really leads, and, for an instruction file, the human's question.
 *
 * @module
 */
import { resolve } from "node:path";
import type { Preflight, ToolCall } from "../target.ts";
import { type PathRoots, realPathForAccess } from "./confine.ts";
import { instructionWriteQuestion } from "./instruction_files.ts";

/**
 * Where each of the `paths` arguments of a write that goes through a symlink really leads
 * (`notes.txt` → `.git/config`), so the human approves the file that would change, not the name
 * the agent gave it; a write to an instruction file adds its question. Undefined: nothing to say.
 */
export function writePreflight(
  call: ToolCall,
  paths: readonly string[],
  roots: PathRoots,
): Preflight | undefined {
  const resolved: Record<string, string> = {};
  for (const name of paths) {
    const given = call.args[name];
    if (typeof given !== "string" || given === "" || given.includes("\0")) continue;
    const absolute = resolve(roots.workspace, given);
    let real: string;
    try {
      real = realPathForAccess(absolute);
    } catch {
      continue; // a dangling link: the call itself is refused with why
    }
    if (real !== absolute) resolved[given] = real;
  }
  const entries = Object.entries(resolved);
  // A write to an instruction file: this question is the human's, shows the new content on
  // the human's page, and covers the one the call itself would ask.
  const instruction = instructionWriteQuestion(call.toolId, call.args, roots);
  if (entries.length === 0 && !instruction) return undefined;
  const said = entries.map(([given, real]) => `"${given}" resolves to "${real}".`);
  return {
    description: [...said, ...(instruction ? [instruction.description] : [])].join(" "),
    context: { ...(entries.length ? { resolved } : {}), ...instruction?.context },
    ...(instruction ? { covers: instruction, forHuman: instruction.forHuman } : {}),
  };
}
