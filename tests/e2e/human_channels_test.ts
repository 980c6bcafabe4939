/**
 * End to end: the human channels of an approval (docs/approvals.md "Channels"). A one-shot client
 * (the Inspector CLI, mcporter) runs `pml` once per call, so the link of that `pml` dies with it:
 * `pml approvals --open` serves the page itself with a fresh link (and hands it to `xdg-open`);
 * a desktop notification carries a link when `PML_NOTIFY=desktop`, and none is sent by default.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { enterPage, postDecision } from "../../packages/pml/src/testing/raw_http.ts";
import { waitForLine } from "../../packages/pml/src/testing/wait_for_line.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio, PML_BIN, pmlEnv } from "./_spawn.ts";

const PERMS = {
  permissions: { allow: ["filesystem:read_file"], ask: ["filesystem:write_file"], deny: [] },
};
const LINK = /http:\/\/127\.[0-9.]+:\d+\/\?token=[0-9a-f]{48}/;

/** A folder with a fake `name` program that appends its arguments (one per line) to `log`. */
function fakeProgram(dir: string, name: string, log: string): void {
  Deno.mkdirSync(dir, { recursive: true });
  const script = join(dir, name);
  Deno.writeTextFileSync(
    script,
    `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done >> "${log}"\n`,
  );
  Deno.chmodSync(script, 0o755);
}

async function until<T>(what: () => T | undefined | Promise<T | undefined>): Promise<T> {
  while (true) {
    const v = await what();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
}

const readOr = (path: string) => Deno.readTextFile(path).catch(() => "");

async function decide(url: string, id: string, decision: string) {
  const s = await enterPage(url);
  assertEquals(s.status, 200, s.page);
  assertStringIncludes(s.page, id);
  return await postDecision(s, id, decision);
}

Deno.test("one-shot client: pml exits after asking; `pml approvals --open` serves a fresh link (handed to xdg-open), the human's Yes there lets the next pml's pml__continue write", async () => {
  await using ws = tempWorkspace(PERMS);
  let id: string;
  {
    await using first = await connectStdio(ws);
    const r = await first.callTool({
      name: "filesystem__write_file",
      arguments: { path: "w.txt", content: "x" },
    });
    id = String((r.structuredContent as Record<string, unknown>).workflow_id);
  }
  const bin = join(ws.root, "bin");
  const opened = join(ws.root, "opened.log");
  fakeProgram(bin, "xdg-open", opened);
  const open = new Deno.Command(PML_BIN, {
    args: ["approvals", "--open"],
    cwd: ws.dir,
    env: pmlEnv(ws, { PATH: `${bin}:${Deno.env.get("PATH")}` }),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const { match, printed, rest } = await waitForLine(
    open.stdout,
    LINK,
    "pml approvals --open",
  );
  const link = match[0];
  assertStringIncludes(printed, "1 approval(s) wait");
  assertEquals((await until(() => readOr(opened))).trim(), link, "the browser opener got it");

  const r = await decide(link, id, "yes");
  assertEquals(r.status, 303, r.body);
  // Nothing waits any more: the command ends by itself.
  await rest;
  const status = await open.status;
  await open.stderr.cancel();
  assertEquals(status.code, 0);

  await using second = await connectStdio(ws);
  const done = await second.callTool({
    name: "pml__continue",
    arguments: { workflow_id: id, decision: "yes" },
  });
  assert(!done.isError, JSON.stringify(done));
  assertEquals(ws.read("w.txt"), "x");
  const audit = ws.read(".pml/audit.log");
  assertStringIncludes(audit, `"event":"approval_decided"`);
  assertStringIncludes(audit, `"decision":"yes","by":"user","via":"page"`);
});

Deno.test("desktop notification: with PML_NOTIFY=desktop notify-send gets the question and a working link; off by default", async () => {
  await using ws = tempWorkspace(PERMS);
  const bin = join(ws.root, "bin");
  const notified = join(ws.root, "notified.log");
  fakeProgram(bin, "notify-send", notified);
  const path = `${bin}:${Deno.env.get("PATH")}`;
  const write = async (client: Awaited<ReturnType<typeof connectStdio>>, file: string) => {
    const r = await client.callTool({
      name: "filesystem__write_file",
      arguments: { path: file, content: file },
    });
    return String((r.structuredContent as Record<string, unknown>).workflow_id);
  };

  {
    await using quiet = await connectStdio(ws, { env: { PATH: path } });
    await write(quiet, "quiet.txt");
    // Off by default: pml told its stderr, and nothing else.
    await until(() => LINK.test(quiet.stderr()));
  }
  assertEquals(await readOr(notified), "", "no notification unless enabled");

  await using loud = await connectStdio(ws, { env: { PATH: path, PML_NOTIFY: "desktop" } });
  const id = await write(loud, "loud.txt");
  const note = await until(async () => {
    const t = await readOr(notified);
    return LINK.test(t) ? t : undefined;
  });
  assertStringIncludes(note, "PML: approval needed");
  assertStringIncludes(note, 'Allow "filesystem:write_file" to run?');
  assertStringIncludes(note, `pml approve ${id}`);
  const r = await decide(LINK.exec(note)![0], id, "yes");
  assertEquals(r.status, 303, r.body);
  const done = await loud.callTool({
    name: "pml__continue",
    arguments: { workflow_id: id, decision: "yes" },
  });
  assert(!done.isError, JSON.stringify(done));
  assertEquals(ws.read("loud.txt"), "loud.txt");
});
