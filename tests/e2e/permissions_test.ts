/**
 * End to end: the precedence of permission patterns (docs/permissions.md) through a spawned
 * `bin/pml stdio` and the SDK client, with the human answering by elicitation.
 */
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "./_spawn.ts";

const text = (r: unknown) =>
  ((r as { content: { text?: string }[] }).content ?? []).map((c) => c.text ?? "").join("");

Deno.test("e2e permissions: 'always' under a wildcard ask sticks for that tool only (seed serena:* scenario)", async () => {
  await using ws = tempWorkspace({
    permissions: { allow: [], ask: ["filesystem:*", "shell:*"], deny: [] },
  });
  const asked: string[] = [];
  let answer: "yes" | "always" | "no" = "always";
  {
    await using client = await connectStdio(ws, {
      elicit: (m) => (asked.push(m), answer),
    });
    const first = await client.callTool({
      name: "filesystem:write_file",
      arguments: { path: "a.txt", content: "A" },
    });
    assert(!first.isError, text(first));
    assertEquals(asked.length, 1);
    assertStringIncludes(asked[0], "filesystem:write_file");
    const perms = JSON.parse(ws.read(".pml.json")).permissions;
    assertEquals(perms.allow, ["filesystem:write_file"]);
    assertEquals(perms.ask, ["filesystem:*", "shell:*"]);

    // Future calls to that exact tool skip the question...
    const second = await client.callTool({
      name: "filesystem__write_file",
      arguments: { path: "a.txt", content: "B" },
    });
    assert(!second.isError, text(second));
    assertEquals(ws.read("a.txt"), "B");
    assertEquals(asked.length, 1);

    // ...while the other tools of the wildcard still ask.
    answer = "no";
    const other = await client.callTool({
      name: "filesystem:edit_file",
      arguments: { path: "a.txt", edits: [{ oldText: "B", newText: "C" }] },
    });
    assert(other.isError);
    assertEquals(asked.length, 2);
    assertStringIncludes(asked[1], "filesystem:edit_file");
    assertEquals(ws.read("a.txt"), "B");

    // The issue's own case: `ask: ["shell:*"]`, "always" for shell:exec.
    answer = "always";
    const exec1 = await client.callTool({ name: "shell:exec", arguments: { command: "echo one" } });
    assert(!exec1.isError, text(exec1));
    assertEquals(asked.length, 3);
    const exec2 = await client.callTool({ name: "shell:exec", arguments: { command: "echo two" } });
    assert(!exec2.isError, text(exec2));
    assertStringIncludes(text(exec2), "two");
    assertEquals(asked.length, 3);
  }

  // A new session reads the same .pml.json: still no question for the tool chosen "always".
  answer = "no";
  await using again = await connectStdio(ws, { elicit: (m) => (asked.push(m), answer) });
  const third = await again.callTool({
    name: "filesystem:write_file",
    arguments: { path: "a.txt", content: "D" },
  });
  assert(!third.isError, text(third));
  assertEquals(ws.read("a.txt"), "D");
  assertEquals(asked.length, 3);
});

Deno.test("e2e permissions: deny wins over an exact allow; an exact ask wins over an exact allow", async () => {
  await using ws = tempWorkspace({
    permissions: {
      allow: ["filesystem:move_file", "filesystem:write_file", "filesystem:read_file"],
      ask: ["filesystem:write_file"],
      deny: ["filesystem:move_file"],
    },
  });
  ws.write("m.txt", "M");
  const asked: string[] = [];
  await using client = await connectStdio(ws, { elicit: (m) => (asked.push(m), "no") });
  const moved = await client.callTool({
    name: "filesystem:move_file",
    arguments: { source: "m.txt", destination: "n.txt" },
  });
  assert(moved.isError);
  assertStringIncludes(text(moved), "denied by .pml.json");
  assertEquals(ws.read("m.txt"), "M");
  const write = await client.callTool({
    name: "filesystem:write_file",
    arguments: { path: "w.txt", content: "W" },
  });
  assert(write.isError);
  assertEquals(asked.length, 1);
  assertStringIncludes(asked[0], "filesystem:write_file");
});
