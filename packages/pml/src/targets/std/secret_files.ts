import { basename, relative } from "node:path";
import type { ApprovalRequest } from "../../permission/approvals.ts";

/** Std tools that return a file's content (the others return names, sizes or diffs of writes). */
const CONTENT_READS: ReadonlySet<string> = new Set(["filesystem:read_file"]);

/**
 * True for a `.env*` file (`.env`, `.env.local`, `.envrc`, …), judged by its real path: it holds
 * the keys and passwords of the project, which a read would hand to the model's provider.
 */
export function isDotenvFile(realPath: string): boolean {
  return basename(realPath).startsWith(".env");
}

/**
 * The question to ask before a std tool hands the content of a `.env*` file to the agent, or
 * `undefined` when the call reads none. `args` are the confined (real) paths. The question is the
 * human's by default (`approvalMode`: `context.secret_file`), even where the tool is allowed.
 */
export function secretReadQuestion(
  toolId: string,
  args: Record<string, unknown>,
  originalArgs: Record<string, unknown>,
  workspace: string,
): ApprovalRequest | undefined {
  if (!CONTENT_READS.has(toolId)) return undefined;
  const path = args.path;
  if (typeof path !== "string" || !isDotenvFile(path)) return undefined;
  const file = relative(workspace, path) || path;
  return {
    type: "tool_permission",
    description: `Allow "${toolId}" to read "${file}"? It is a .env file: its values (API keys, ` +
      `passwords) would go to the agent and its model provider. "always" allows this read only.`,
    context: { tool: toolId, arguments: originalArgs, secret_file: file },
  };
}
