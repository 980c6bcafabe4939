/**
 * The two audiences stay apart by type (DESIGN §13 "Channels"): a link put into a result by
 * mistake carries no token, and what the agent is told is built from the approval id alone.
 */
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { ApprovalLink, howHumanAnswers } from "./human_channel.ts";

Deno.test("an ApprovalLink put into JSON, a template or String() is a placeholder; only forHuman() gives the URL", () => {
  const url = "http://127.9.8.7:4000/?token=" + "ab".repeat(24);
  const link = new ApprovalLink(url);
  const leaked = [
    JSON.stringify({ status: "approval_required", approval_url: link }),
    `open ${link}`,
    String(link),
    JSON.stringify([link]),
  ];
  for (const text of leaked) {
    assert(!text.includes("token"), text);
    assert(!text.includes("127.9.8.7"), text);
    assertStringIncludes(text, "shown to the human only");
  }
  assertEquals(link.forHuman(), url);
});

Deno.test("what the agent is told names the approval id and the commands a human runs, and no link", () => {
  const id = "00000000-0000-4000-8000-000000000000";
  const text = howHumanAnswers(id);
  assertStringIncludes(text, `pml approve ${id}`);
  assertStringIncludes(text, `pml deny ${id}`);
  assertStringIncludes(text, "pml approvals --open");
  assertStringIncludes(text, `workflow_id "${id}"`);
  assert(!/http|token/.test(text), text);
});
