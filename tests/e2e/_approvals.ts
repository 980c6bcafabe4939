/** Helpers for end-to-end tests of approvals: an agent's write that is asked, then continued. */
import type { Client } from "../../packages/pml/src/sdk/client.ts";
import { join } from "node:path";
import { assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { REPO_MODULES } from "../../packages/pml/src/testing/node_modules.ts";
import { type TempWorkspace, tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";

/** Asks `filesystem:write_file` of `path` (content: the path); returns the workflow id. */
export async function askWrite(client: Client, path: string): Promise<string> {
  const r = await client.callTool({
    name: "filesystem__write_file",
    arguments: { path, content: path },
  });
  const body = r.structuredContent as { status: string; workflow_id: string };
  assertEquals(body.status, "approval_required", JSON.stringify(r));
  return body.workflow_id;
}

/** The agent's `pml:continue` of `id` with `decision`. */
export function continueWith(client: Client, id: string, decision = "yes") {
  return client.callTool({ name: "pml__continue", arguments: { workflow_id: id, decision } });
}

/** A tool of server-everything that answers at once. */
export const EVERYTHING_TOOL = "everything__toggle-simulated-logging";

/**
 * A workspace with server-everything as a hand-written entry: nothing set it up, its run is asked
 * inside the first call. The repository's node_modules is granted by hand: a clone under a home is
 * another user's home to the sandbox, whose HOME is the test's own, so its files are no command's
 * own files there.
 */
export function everythingWorkspace(permissions?: Record<string, string[]>): TempWorkspace {
  const everything = join(
    import.meta.dirname!,
    "..",
    "..",
    "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
  );
  return tempWorkspace({
    ...(permissions ? { permissions } : {}),
    private_mcps: {
      everything: {
        type: "stdio",
        install: { command: "node", args: [everything, "stdio"] },
        permissions: { read: [REPO_MODULES] },
      },
    },
  });
}
