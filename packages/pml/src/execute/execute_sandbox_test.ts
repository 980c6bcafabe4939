import { assert, assertEquals, assertMatch } from "../testing/assert.ts";
import { gatewayFor, tempWorkspace } from "../testing/workspace.ts";
import { execute } from "./_test_helpers.ts";

const PERMS = { permissions: { allow: ["filesystem:read_file"], ask: [], deny: [] } };

Deno.test("pml:execute sandbox: no file, network, env, subprocess or import access of its own", async () => {
  await using ws = tempWorkspace(PERMS);
  ws.write("secret.txt", "workspace secret");
  await using g = await gatewayFor(ws, { env: { PML_API_KEY: "pml_sk_must_not_leak" } });
  const attempts = {
    read: `return await Deno.readTextFile(${JSON.stringify(ws.dir + "/secret.txt")});`,
    write: `await Deno.writeTextFile(${JSON.stringify(ws.dir + "/pwned.txt")}, "x");`,
    fetch: `return (await fetch("http://127.0.0.1:8080/")).status;`,
    env: `return Deno.env.get("PML_API_KEY") ?? Deno.env.toObject();`,
    command: `return new Deno.Command("/bin/sh", { args: ["-c", "id"] }).outputSync();`,
    spawn: `return new Deno.Command("/usr/bin/env").spawn().pid;`,
    importFile: `return await import("file:///etc/passwd");`,
    importJson: `return await import(${
      JSON.stringify("file://" + ws.dir + "/.pml.json")
    }, { with: { type: "json" } });`,
    importData: `return await import("data:text/javascript,export { default } from ${
      encodeURIComponent(JSON.stringify("file://" + ws.dir + "/.pml.json"))
    } with { type: 'json' }");`,
    ffi: `return Deno.dlopen("libc.so.6", {});`,
  };
  for (const [name, code] of Object.entries(attempts)) {
    const body = await execute(g.client, code);
    assertEquals([name, body.isError, body.code], [name, true, "PERMISSION_DENIED"]);
    assertMatch(body.message!, /Requires \w+ access|refused/, name);
    assert(!JSON.stringify(body).includes("workspace secret"), name);
    assert(!JSON.stringify(body).includes("pml_sk_must_not_leak"), name);
  }
  assert(!ws.read(".pml.json").includes("pwned"));
  let pwned = true;
  try {
    ws.read("pwned.txt");
  } catch {
    pwned = false;
  }
  assert(!pwned, "the sandbox wrote a file");
});

Deno.test("pml:execute sandbox: the bridge cannot be tampered with or forged around", async () => {
  await using ws = tempWorkspace(PERMS);
  ws.write("a.txt", "alpha");
  await using g = await gatewayFor(ws);
  // Forged protocol lines on the raw stdout, replaced globals, a replaced Deno and mcp: all
  // contained, and the genuine mcp call still works through the gateway afterwards.
  const body = await execute(
    g.client,
    `const forged = '{"t":"mcp","id":1,"callId":1,"tool":"filesystem:write_file","args":{"path":"f.txt","content":"x"}}\\n';
     const out = [];
     const bytes = new TextEncoder().encode(forged);
     for (const attempt of [
       () => Deno.stdout.writeSync(bytes),
       () => Deno.stdout.write(bytes),
       () => Object.getPrototypeOf(Deno.stdout).writeSync.call(Deno.stdout, bytes),
       () => Deno.stdin.readSync(new Uint8Array(10)),
       // The web streams over the same descriptors.
       async () => { const w = Deno.stdout.writable.getWriter(); await w.write(bytes); w.releaseLock(); },
       async () => { const r = Deno.stdin.readable.getReader(); await r.read(); },
       () => Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Deno.stdout), "writable")?.get?.call(Deno.stdout).getWriter(),
       () => { "use strict"; JSON.stringify = () => forged; },
       () => { "use strict"; globalThis.Deno = { stdout: {} }; },
       () => { "use strict"; Object.defineProperty(Deno, "stdout", { value: {} }); },
       () => { "use strict"; mcp.filesystem = {}; },
       // The runner's own writes: a replaced subarray or length would make it write forged bytes.
       () => { "use strict"; Uint8Array.prototype.subarray = () => bytes; },
       () => { "use strict"; Object.getPrototypeOf(Uint8Array.prototype).subarray = () => bytes; },
       () => {
         "use strict";
         Object.defineProperty(Object.getPrototypeOf(Uint8Array.prototype), "length", { get: () => 1 });
       },
       () => { "use strict"; globalThis.Uint8Array = function () { return bytes; }; },
     ]) {
       try { await attempt(); out.push("allowed"); } catch (e) { out.push(e.name); }
     }
     const text = await mcp.filesystem.read_file({ path: "a.txt" });
     return { out, text };`,
  );
  assertEquals(body.status, "success", JSON.stringify(body));
  const result = body.result as { out: string[]; text: string };
  assertEquals(result.text, "alpha");
  assert(!result.out.includes("allowed"), JSON.stringify(result.out));
  let forgedWrite = true;
  try {
    ws.read("f.txt");
  } catch {
    forgedWrite = false;
  }
  assert(!forgedWrite, "a forged line made a call");
  assertEquals(body.calls?.map((c) => c.tool), ["filesystem:read_file"]);
});

Deno.test("pml:execute sandbox: code cannot answer approvals or nest executions", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  for (
    const call of [
      "mcp.pml.continue({ workflow_id: 'x', decision: 'yes' })",
      "mcp.pml.execute({ code: 'return 1' })",
    ]
  ) {
    const body = await execute(g.client, `return await ${call};`);
    assertEquals([body.isError, body.code], [true, "PERMISSION_DENIED"]);
  }
});

Deno.test("pml:execute sandbox: paths outside the workspace stay refused through mcp.*", async () => {
  await using ws = tempWorkspace(PERMS);
  await using g = await gatewayFor(ws);
  const body = await execute(
    g.client,
    `return await mcp.filesystem.read_file({ path: "/etc/passwd" });`,
  );
  assertEquals([body.isError, body.code], [true, "PERMISSION_DENIED"]);
  assertMatch(body.message!, /outside the workspace/);
  // Caught by the code, it is the tool's own error, with the same code.
  const caught = await execute(
    g.client,
    `try { await mcp.filesystem.read_file({ path: "../x" }); } catch (e) { return e.code; }`,
  );
  assertEquals(caught.result, "PERMISSION_DENIED");
});
