/** Helpers for end-to-end tests of approvals: an agent's write that is asked, then continued. */
import type { Client } from "../../packages/pml/src/sdk/client.ts";
import { assertEquals } from "../../packages/pml/src/testing/assert.ts";

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
