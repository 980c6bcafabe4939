/**
 * Writes to instruction files (`config/control_files.ts` `INSTRUCTION_FILES`: `CLAUDE.md`,
 * `AGENTS.md`, `.cursorrules`, …), which the next agent session reads as instructions: the human's
 * decision whatever `allow` and `approvals` say (`approvalMode`: `context.instruction_file`), with the
 * new content on the human's page and in `pml approvals` (`forHuman`), and the question naming the
 * file the path resolves to (`readme-notes.txt`, a symlink to `CLAUDE.md`, or a hard link of it, is
 * `CLAUDE.md`).
 *
 * @module
 */
import { relative, resolve } from "node:path";
import type { ApprovalRequest } from "../../permission/approvals.ts";
import {
  type GuardedHit,
  guardedPathHit,
  instructionFilePaths,
  sameFileAsControl,
} from "../../config/control_files.ts";
import { type PathRoots, realPathForAccess } from "./confine.ts";

/** Std tools that write, and the arguments that name what they write. */
const WRITES: Readonly<Record<string, readonly string[]>> = {
  "filesystem:write_file": ["path"],
  "filesystem:edit_file": ["path"],
  "filesystem:create_directory": ["path"],
  "filesystem:move_file": ["source", "destination"],
};

/** The most of a moved file's content the human's page shows. */
const SHOWN_BYTES = 64 * 1024;

/**
 * The human's question before a std write changes an instruction file, or `undefined`. Built from
 * the call's own arguments (the same question for the gateway's `ask` and for the call itself, so
 * that the one covers the other).
 */
export function instructionWriteQuestion(
  toolId: string,
  args: Record<string, unknown>,
  roots: PathRoots,
): ApprovalRequest | undefined {
  const names = WRITES[toolId];
  if (!names) return undefined;
  const writeRoots = [roots.workspace, ...roots.write];
  for (const name of names) {
    const given = args[name];
    if (typeof given !== "string" || given === "" || given.includes("\0")) continue;
    let real: string;
    try {
      real = realPathForAccess(resolve(roots.workspace, given));
    } catch {
      continue; // a dangling link: the call itself is refused with why
    }
    const hit = guardedPathHit(real, writeRoots) ?? hardLinkOf(real, writeRoots);
    if (hit?.kind !== "instruction") continue;
    const file = relative(roots.workspace, hit.path) || hit.path;
    const shownFile = file.startsWith("..") ? hit.path : file;
    const via = given === shownFile ? "" : ` (the path given was "${given}")`;
    return {
      type: "tool_permission",
      description: `"${toolId}" would change "${shownFile}"${via}, an instruction file: the ` +
        `next agent session in this folder reads it as instructions, so the write is a human's ` +
        `decision whatever .pml.json allows; the new content is on the approval page. "always" ` +
        `allows this write only.`,
      context: { tool: toolId, arguments: args, instruction_file: shownFile },
      forHuman: { description: `${shownFile}: ${newContent(toolId, args, roots)}` },
    };
  }
  return undefined;
}

/** The instruction file `real` is a hard link of (another name of the same file), as a hit. */
function hardLinkOf(real: string, roots: readonly string[]): GuardedHit | undefined {
  for (const root of roots) {
    const path = sameFileAsControl(real, root, instructionFilePaths(root));
    if (path) return { path, kind: "instruction", root };
  }
  return undefined;
}

/** What the write would put there, for the human. */
function newContent(toolId: string, args: Record<string, unknown>, roots: PathRoots): string {
  if (toolId === "filesystem:write_file") return `new content\n${String(args.content ?? "")}`;
  if (toolId === "filesystem:edit_file" && Array.isArray(args.edits)) {
    const lines = args.edits.flatMap((e) => {
      const { oldText, newText } = (e ?? {}) as { oldText?: unknown; newText?: unknown };
      return [
        ...String(oldText ?? "").split("\n").map((l) => `- ${l}`),
        ...String(newText ?? "").split("\n").map((l) => `+ ${l}`),
      ];
    });
    return `edits\n${lines.join("\n")}`;
  }
  if (toolId === "filesystem:move_file" && typeof args.source === "string") {
    let text = "";
    try {
      const bytes = Deno.readFileSync(realPathForAccess(resolve(roots.workspace, args.source)));
      text = new TextDecoder().decode(bytes.subarray(0, SHOWN_BYTES));
    } catch { /* a folder, or missing: the call says */ }
    return `moved from "${args.source}" onto it, or it moved away; the moved content\n${text}`;
  }
  return "a folder of that name";
}
