import { assert, assertStringIncludes } from "../testing/assert.ts";
import { stderrChannel } from "./human_channels.ts";

Deno.test("stderrChannel: what the agent asked for is told on one line, its controls escaped", async () => {
  const lines: string[] = [];
  const link = () => ({ forHuman: () => "http://127.0.0.1:1/a#t" });
  await stderrChannel(link as never, (l) => lines.push(l)).approvalWaiting({
    workflowId: "w1",
    description: 'Allow "x\x1b[2J\u202e\npml: approved" to run?',
    reminder: false,
  });
  const [told] = lines;
  // deno-lint-ignore no-control-regex
  assert(!/[\x1b\u202e]/.test(told), JSON.stringify(told));
  assertStringIncludes(told, 'Allow "x\\x1b[2J\\u{202e}\\x0apml: approved" to run?');
  assert(!told.split("\n").some((l) => l.startsWith("pml: approved")), told);
});
