/**
 * End to end: the sandbox seen from inside `shell:exec`, through a spawned `pml stdio`
 * (docs/security.md, "Refusals that say how to grant" and "Package managers in the sandbox"):
 * what the operating system refuses comes back with the grant that would allow it; npm fails at
 * once where no host is granted, and installs from a granted local registry mirror.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace, textOf } from "../../packages/pml/src/testing/workspace.ts";
import { connectStdio } from "./_spawn.ts";
import { freePort } from "./_cloud.ts";

interface ShellOut {
  code: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  hint?: string;
}

async function sh(
  client: Awaited<ReturnType<typeof connectStdio>>,
  command: string,
  timeoutMs = 30_000,
): Promise<ShellOut> {
  const r = await client.callTool(
    { name: "shell:exec", arguments: { command, timeout_ms: timeoutMs } },
    undefined,
    { timeout: timeoutMs + 30_000 },
  );
  assert(!r.isError, textOf(r));
  return r.structuredContent as unknown as ShellOut;
}

/** An npm registry of one package, `tiny-pkg@1.0.0`, on 127.0.0.1: a local mirror. */
async function startMirror(root: string) {
  const src = join(root, "tiny", "package");
  Deno.mkdirSync(src, { recursive: true });
  Deno.writeTextFileSync(
    join(src, "package.json"),
    JSON.stringify({ name: "tiny-pkg", version: "1.0.0", main: "index.js" }),
  );
  Deno.writeTextFileSync(join(src, "index.js"), "module.exports = 42;\n");
  const tgz = join(root, "tiny", "tiny-pkg-1.0.0.tgz");
  const tar = await new Deno.Command("tar", {
    args: ["-czf", tgz, "-C", join(root, "tiny"), "package"],
  }).output();
  assertEquals(tar.code, 0);
  const bytes = Deno.readFileSync(tgz);
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-512", bytes));
  const sha512 = btoa(String.fromCharCode(...digest));
  const server: Deno.HttpServer<Deno.NetAddr> = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    onListen: () => {},
  }, (req): Response => {
    const path = new URL(req.url).pathname;
    const base: string = `http://127.0.0.1:${server.addr.port}`;
    if (path === "/tiny-pkg") {
      return Response.json({
        name: "tiny-pkg",
        "dist-tags": { latest: "1.0.0" },
        versions: {
          "1.0.0": {
            name: "tiny-pkg",
            version: "1.0.0",
            main: "index.js",
            dist: {
              tarball: `${base}/tiny-pkg/-/tiny-pkg-1.0.0.tgz`,
              integrity: `sha512-${sha512}`,
            },
          },
        },
      });
    }
    if (path === "/tiny-pkg/-/tiny-pkg-1.0.0.tgz") return new Response(bytes);
    return new Response("not found", { status: 404 });
  });
  return {
    port: server.addr.port,
    [Symbol.asyncDispose]: () => server.shutdown(),
  };
}

Deno.test("e2e sandbox: npm installs from a granted local registry mirror (its cache is the sandbox's own, HOME stays read-only)", async () => {
  await using ws = tempWorkspace();
  await using mirror = await startMirror(ws.root);
  ws.write(
    ".pml.json",
    JSON.stringify({
      permissions: { allow: ["shell:exec"], ask: [], deny: [] },
      sandbox: { net: [`127.0.0.1:${mirror.port}`] },
    }),
  );
  ws.write("package.json", JSON.stringify({ name: "app", version: "1.0.0", private: true }));
  await using agent = await connectStdio(ws);
  const out = await sh(
    agent,
    `npm install tiny-pkg --registry http://127.0.0.1:${mirror.port}/ --no-audit --no-fund`,
    60_000,
  );
  assertEquals(out.code, 0, JSON.stringify(out));
  assertEquals(JSON.parse(ws.read("node_modules/tiny-pkg/package.json")).version, "1.0.0");
  const home = await sh(agent, "touch ~/.npmrc-probe");
  assert(home.code !== 0, "HOME is still read-only");
});

Deno.test("e2e sandbox: refusals of the OS name the grant that would allow them (sandbox.write, sandbox.net with the refused host)", async () => {
  await using ws = tempWorkspace();
  const granted = freePort();
  const other = freePort();
  ws.write(
    ".pml.json",
    JSON.stringify({
      permissions: { allow: ["shell:exec"], ask: [], deny: [] },
      sandbox: { net: [`127.0.0.1:${granted}`] },
    }),
  );
  await using agent = await connectStdio(ws);
  const write = await sh(agent, "touch ~/x");
  assertStringIncludes(write.stderr, "Read-only file system");
  assertStringIncludes(write.hint ?? "", `"sandbox": {"write": [${JSON.stringify(ws.home)}]}`);
  assertStringIncludes(write.hint ?? "", "pml trust");

  const net = await sh(agent, `curl -fsS http://127.0.0.1:${other}/`);
  assert(net.code !== 0, JSON.stringify(net));
  assertStringIncludes(net.hint ?? "", "sandbox.net");
  assertStringIncludes(net.hint ?? "", `"sandbox": {"net": ["127.0.0.1:${other}"]}`);

  const control = await sh(agent, "echo x > .pml.json");
  assertStringIncludes(control.hint ?? "", "no grant opens them");
  const fine = await sh(agent, "echo fine > ok.txt && cat ok.txt");
  assertEquals(fine.stdout, "fine\n");
  assertEquals(fine.hint, undefined, "no hint where nothing was refused");
});

Deno.test("e2e sandbox: with no host granted, npm install fails within the call, and says sandbox.net", async () => {
  await using ws = tempWorkspace({ permissions: { allow: ["shell:exec"], ask: [], deny: [] } });
  ws.write("package.json", JSON.stringify({ name: "app", version: "1.0.0", private: true }));
  await using agent = await connectStdio(ws);
  // npm's default retries wait about a minute on a registry it cannot reach; the call's bound here
  // is 40 s, so only a fail-fast npm answers inside it.
  const out = await sh(
    agent,
    "npm install left-pad --registry http://npm.invalid/ --no-audit --no-fund",
    40_000,
  );
  assertEquals(out.timedOut, false, JSON.stringify(out));
  assert(out.code !== 0, JSON.stringify(out));
  assertStringIncludes(out.hint ?? "", "The sandbox has no network");
  assertStringIncludes(out.hint ?? "", `"sandbox": {"net": ["npm.invalid"]}`);
});
