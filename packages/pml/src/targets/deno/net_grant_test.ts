/**
 * Network grants of registry modules (docs/permissions.md, "Network grants"): a module published
 * to the real server app, called through the gateway, reaches the loopback address `.pml.json`
 * grants it and nothing else; registry code cannot grant itself network by declaring it.
 */
import { assert, assertEquals, assertStringIncludes } from "../../testing/assert.ts";
import { gatewayFor, tempWorkspace, textOf } from "../../testing/workspace.ts";
import { testRegistry } from "../../registry/_testing.ts";

/** A loopback HTTP server that answers its name and counts the requests it got. */
function loopbackServer(name: string) {
  const seen: string[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) => (seen.push(new URL(req.url).pathname), new Response(`hello from ${name}`)),
  );
  return {
    port: server.addr.port,
    seen,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

/** A module that fetches `args.url` and declares `declared` as the hosts it needs. */
function fetcher(declared: string[]): string {
  return `export async function get(args: { url: string }) {
  const res = await fetch(args.url);
  return await res.text();
}
export const __meta__ = {
  namespace: "netmod",
  tools: { get: { description: "GET a URL", inputSchema: { type: "object" } } },
  permissions: { net: ${JSON.stringify(declared)} },
};
`;
}

async function setup(declared: (a: number, b: number) => string[], perms: unknown) {
  const a = loopbackServer("A");
  const b = loopbackServer("B");
  const reg = await testRegistry();
  await reg.publish("netmod", "get", fetcher(declared(a.port, b.port)));
  const ws = tempWorkspace({
    registries: [reg.url],
    permissions: perms,
    sandbox: { net: [`127.0.0.1:${a.port}`] },
  });
  const asked: string[] = [];
  const g = await gatewayFor(ws, {
    registry: { fetch: reg.fetch, warn: () => {} },
    env: { HOME: ws.home },
    elicit: (m) => (asked.push(m), "yes"),
  });
  return {
    a,
    b,
    ws,
    asked,
    get: (port: number) =>
      g.client.callTool({
        name: "netmod:get",
        arguments: { url: `http://127.0.0.1:${port}/probe` },
      }),
    audit: () => ws.read(".pml/audit.log"),
    async [Symbol.asyncDispose]() {
      await g[Symbol.asyncDispose]();
      await ws[Symbol.asyncDispose]();
      await reg[Symbol.asyncDispose]();
      await a[Symbol.asyncDispose]();
      await b[Symbol.asyncDispose]();
    },
  };
}

const ALLOW = { allow: ["netmod:*"], ask: [], deny: [] };

Deno.test("net grant: a registry module granted 127.0.0.1:PORT reaches it and is refused on another loopback port", async () => {
  // It declares both ports; .pml.json grants only A.
  await using t = await setup((a, b) => [`127.0.0.1:${a}`, `127.0.0.1:${b}`], ALLOW);
  const ok = await t.get(t.a.port);
  assert(!ok.isError, textOf(ok));
  assertEquals(textOf(ok), "hello from A");
  assertEquals(t.a.seen, ["/probe"]);

  const refused = await t.get(t.b.port);
  assert(refused.isError, textOf(refused));
  assertStringIncludes(textOf(refused), "refused by the sandbox");
  // In PML's words: the setting that grants it, not Deno's command-line flag.
  assertStringIncludes(textOf(refused), `no network access to "127.0.0.1:${t.b.port}"`);
  assertStringIncludes(textOf(refused), `add "127.0.0.1:${t.b.port}" to "sandbox.net"`);
  assert(!textOf(refused).includes("--allow-net"), textOf(refused));
  assertEquals(t.b.seen, [], "no request reached the port that was not granted");
  assertStringIncludes(t.audit(), '"event":"sandbox_violation"');
  assertEquals(t.asked, [], "an allowed tool is not asked");
});

Deno.test("net grant: registry code that declares no host gets none, whatever .pml.json grants", async () => {
  await using t = await setup(() => [], ALLOW);
  const r = await t.get(t.a.port);
  assert(r.isError, textOf(r));
  assertEquals(t.a.seen, []);
});

Deno.test("net grant: the question about an ask tool shows the network grant", async () => {
  await using t = await setup(
    (a) => [`127.0.0.1:${a}`],
    { allow: [], ask: ["netmod:*"], deny: [] },
  );
  const r = await t.get(t.a.port);
  assertEquals(textOf(r), "hello from A");
  assertEquals(t.asked.length, 1);
  assertStringIncludes(
    t.asked[0],
    `Allow "netmod:get" to run? It runs with network access to 127.0.0.1:${t.a.port} only.`,
  );
});

Deno.test("net grant: a private deno MCP gets its own private_mcps permissions.net, nothing more", async () => {
  await using a = loopbackServer("A");
  await using b = loopbackServer("B");
  const code = fetcher([]).replace('"netmod"', '"mine"');
  await using ws = tempWorkspace({
    permissions: { allow: ["mine:*"], ask: [], deny: [] },
    private_mcps: {
      mine: { type: "deno", code, permissions: { net: [`127.0.0.1:${a.port}`] } },
    },
  });
  await using g = await gatewayFor(ws, { env: { HOME: ws.home } });
  const get = (port: number) =>
    g.client.callTool({ name: "mine:get", arguments: { url: `http://127.0.0.1:${port}/p` } });
  const ok = await get(a.port);
  assertEquals(textOf(ok), "hello from A");
  const refused = await get(b.port);
  assert(refused.isError, textOf(refused));
  assertEquals(b.seen, []);
});
