import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../testing/workspace.ts";
import { bwrapArgs, detectOsSandbox } from "./os_sandbox.ts";

Deno.test("bwrapArgs: namespaces, read-only system, grants as given, control files over them", async () => {
  await using ws = tempWorkspace();
  ws.write(".mcp.json", "{}");
  ws.write(".pml.json", "{}");
  const args = bwrapArgs(
    {
      ro: ["/grant/ro"],
      rw: [ws.dir],
      protect: [`${ws.dir}/.pml.json`, `${ws.dir}/.mcp.json`, `${ws.dir}/.nope`],
      net: false,
    },
    ws.dir,
    ["deno", "run", "x.ts"],
    "/opt/deno/deno",
  );
  const text = args.join(" ");
  assertStringIncludes(text, "--unshare-all --die-with-parent --new-session --cap-drop ALL");
  assert(!args.includes("--share-net"));
  assertStringIncludes(text, "--ro-bind /usr /usr");
  assertStringIncludes(text, "--ro-bind /opt/deno /opt/deno");
  assertStringIncludes(text, "--ro-bind-try /grant/ro /grant/ro");
  assertStringIncludes(text, `--bind-try ${ws.dir} ${ws.dir}`);
  // Protected files come after the writable bind, so they win; missing ones are not bound.
  assert(text.indexOf(`--ro-bind ${ws.dir}/.mcp.json`) > text.indexOf(`--bind-try ${ws.dir}`));
  assertStringIncludes(text, `--ro-bind ${ws.dir}/.pml.json`);
  assert(!text.includes(".nope"));
  assert(!/bind(-try)? \/(home|root)\b/.test(text), "no home folder is bound");
  assertEquals(args.slice(-4), ["--", "deno", "run", "x.ts"]);
  assert(bwrapArgs({ ro: [], rw: [], protect: [], net: true }, "/", ["x"]).includes("--share-net"));
});

Deno.test("detectOsSandbox: a PATH without bwrap says what to install", () => {
  // A fresh detection (the cache holds the real one): only the missing-binary branch is reachable.
  const status = detectOsSandbox("/nonexistent");
  if (status.available) return; // cached from an earlier detection in this process
  assertStringIncludes(status.reason, "bubblewrap");
});

const SHELL = { permissions: { allow: ["shell"] } };
const MISSING = () => ({ available: false as const, reason: "bubblewrap is not installed (test)" });

Deno.test("shell:exec without an OS sandbox is refused with what to install; nothing runs", async () => {
  await using ws = tempWorkspace(SHELL);
  await using g = await gatewayFor(ws, { detectOs: MISSING });
  const r = await g.client.callTool({
    name: "shell:exec",
    arguments: { command: "touch ran.txt" },
  });
  assert(r.isError);
  assertStringIncludes(textOf(r), "no OS sandbox");
  assertStringIncludes(textOf(r), "bubblewrap is not installed");
  assertStringIncludes(textOf(r), '"unconfined": true');
  assert(!(await Deno.stat(`${ws.dir}/ran.txt`).catch(() => false)));
  assertStringIncludes(ws.read(".pml/audit.log"), "no OS sandbox");
});

Deno.test("shell:exec with sandbox.unconfined runs and says so in its result", async () => {
  await using ws = tempWorkspace({ ...SHELL, sandbox: { unconfined: true } });
  await using g = await gatewayFor(ws, { detectOs: MISSING });
  const r = await g.client.callTool({ name: "shell:exec", arguments: { command: "echo hi" } });
  assert(!r.isError, textOf(r));
  assertStringIncludes(textOf(r), "ran UNCONFINED");
  assertStringIncludes(textOf(r), '"stdout":"hi\\n"');
});
