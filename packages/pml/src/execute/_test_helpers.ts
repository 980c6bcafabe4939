/** Helpers shared by the `pml:execute` tests. */
import type { Client } from "../sdk/client.ts";
import { childPids } from "../procfs.ts";
import { textOf } from "../testing/workspace.ts";

/** The parsed body of a `pml:execute` (or `pml:continue`) result, with `isError`. */
export interface ExecBody {
  status: string;
  code?: string;
  message?: string;
  result?: unknown;
  calls?: { tool: string; routing: string; ms: number; replayed?: boolean }[];
  workflow_id?: string;
  description?: string;
  isError?: boolean;
  [key: string]: unknown;
}

/** Calls `name` and returns the JSON body of its text, checked against `structuredContent`. */
export async function callJson(
  client: Client,
  name: string,
  args: Record<string, unknown>,
): Promise<ExecBody> {
  const res = await client.callTool({ name, arguments: args });
  const body = JSON.parse(textOf(res)) as ExecBody;
  if (JSON.stringify(res.structuredContent) !== JSON.stringify(body)) {
    throw new Error(`structuredContent differs from the text: ${textOf(res)}`);
  }
  return { ...body, isError: res.isError === true };
}

/** `pml:execute` of `code`. */
export function execute(
  client: Client,
  code: string,
  extra: Record<string, unknown> = {},
): Promise<ExecBody> {
  return callJson(client, "pml__execute", { code, ...extra });
}

/** Pids of live `pml:execute` sandboxes started by this process (from /proc). */
export function execSandboxPids(): number[] {
  return childPids(Deno.pid, { zombies: true }).filter((pid) => {
    try {
      return Deno.readTextFileSync(`/proc/${pid}/cmdline`).includes("exec_entry.ts");
    } catch {
      return false; // gone meanwhile
    }
  });
}

/** True while `/proc/<pid>` exists (a zombie counts as existing). */
export function processExists(pid: number): boolean {
  try {
    Deno.statSync(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}
