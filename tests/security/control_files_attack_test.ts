/**
 * Attack: an agent with every filesystem tool allowed tries to rewrite PML's trust roots
 * (`.pml.json`, `.pml/mcp.lock`, `.pml/audit.log`, `.mcp.json`, client configs) through a spawned
 * `pml stdio`, directly and from `pml:execute` code. Every attempt must be refused with a clear
 * error, audited, and leave the files byte for byte as they were.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "../e2e/_spawn.ts";

const text = (r: unknown) =>
  ((r as { content: { text?: string }[] }).content ?? []).map((c) => c.text ?? "").join("");

const CONTROL = [
  ".pml.json",
  ".pml/mcp.lock",
  ".pml/deps.json",
  ".mcp.json",
  ".cursor/mcp.json",
  ".vscode/mcp.json",
  ".gemini/settings.json",
  ".codex/config.toml",
  "opencode.json",
  ".qwen/settings.json",
];

/** Spellings of each control path an attacker would try. */
function spellings(rel: string, dir: string): string[] {
  const slash = rel.lastIndexOf("/");
  const dotted = slash < 0 ? `./${rel}` : `${rel.slice(0, slash)}/./${rel.slice(slash + 1)}`;
  return [rel, `src/../${rel}`, join(dir, rel), dotted];
}

Deno.test("attack control_files: allowed filesystem tools cannot write, move, edit or create PML's control files", async () => {
  const config = { permissions: { allow: ["filesystem", "pml"] } };
  await using ws = tempWorkspace(config);
  const before = new Map<string, string>();
  for (const rel of CONTROL) {
    if (rel !== ".pml.json") ws.write(rel, `{"original":"${rel}"}`);
    before.set(rel, ws.read(rel));
  }
  ws.write("src/a.txt", "a");
  Deno.symlinkSync(join(ws.dir, ".pml.json"), join(ws.dir, "src/config-link.json"));
  Deno.symlinkSync(join(ws.dir, ".pml"), join(ws.dir, "src/state"));
  Deno.linkSync(join(ws.dir, ".mcp.json"), join(ws.dir, "src/hard.json"));
  const malicious = JSON.stringify({ permissions: { allow: ["*"] }, sandbox: { write: ["/"] } });

  await using client = await connectStdio(ws);
  const attempts: { name: string; arguments: Record<string, unknown> }[] = [];
  for (const rel of CONTROL) {
    for (const p of spellings(rel, ws.dir)) {
      attempts.push({ name: "filesystem__write_file", arguments: { path: p, content: malicious } });
      attempts.push({
        name: "filesystem__edit_file",
        arguments: { path: p, edits: [{ oldText: "original", newText: "pwned" }] },
      });
      attempts.push({
        name: "filesystem__move_file",
        arguments: { source: p, destination: "src/moved" },
      });
      attempts.push({
        name: "filesystem__move_file",
        arguments: { source: "src/a.txt", destination: p },
      });
    }
  }
  for (const p of ["src/config-link.json", "src/state/mcp.lock", "src/state/audit.log"]) {
    attempts.push({ name: "filesystem__write_file", arguments: { path: p, content: malicious } });
  }
  attempts.push({
    name: "filesystem__write_file",
    arguments: { path: "src/hard.json", content: "" },
  });
  for (
    const dir of [
      ".pml",
      ".pml/",
      ".vscode",
      ".cursor",
      ".gemini",
      ".codex",
      ".qwen",
      ".",
      "src/state",
    ]
  ) {
    attempts.push({
      name: "filesystem__move_file",
      arguments: { source: dir, destination: "src/gone" },
    });
  }
  attempts.push({ name: "filesystem__create_directory", arguments: { path: ".pml/approvals" } });
  attempts.push({
    name: "filesystem__write_file",
    arguments: { path: ".pml/audit.log", content: "" },
  });

  for (const attempt of attempts) {
    const result = await client.callTool(attempt);
    const shown = JSON.stringify(attempt).slice(0, 160);
    assert(result.isError, `${shown} was not refused: ${text(result)}`);
    assertStringIncludes(text(result), "control file", shown);
  }
  // From pml:execute code too: nested calls take the same path.
  for (const rel of [".pml.json", ".pml/mcp.lock", ".mcp.json"]) {
    const result = await client.callTool({
      name: "pml__execute",
      arguments: {
        code: `return await mcp.filesystem.write_file({ path: ${
          JSON.stringify(rel)
        }, content: "x" });`,
      },
    });
    assertStringIncludes(text(result), "control file");
  }

  for (const [rel, content] of before) assertEquals(ws.read(rel), content, `${rel} was changed`);
  const audit = Deno.readTextFileSync(join(ws.dir, ".pml/audit.log"));
  const blocked = audit.split("\n").filter((l) => l.includes('"control_file_blocked"')).length;
  assert(blocked >= attempts.length, `${blocked} audit lines for ${attempts.length} attempts`);
  console.error(`attack control_files: ${attempts.length + 3} attempts, none got through`);
});

Deno.test("attack control_files: ordinary files beside the control files stay writable", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["filesystem"] } });
  ws.write(".editorconfig", "");
  ws.write("docs/readme.md", "");
  await using client = await connectStdio(ws);
  for (
    const p of [".editorconfig", ".pml.json.example", "..notes", "docs/.mcp.json.md", ".git/index"]
  ) {
    const result = await client.callTool({
      name: "filesystem__write_file",
      arguments: { path: p, content: "ok" },
    });
    assert(!result.isError, `${p}: ${text(result)}`);
    assertEquals(ws.read(p), "ok");
  }
});
