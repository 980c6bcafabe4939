import { assert, assertEquals, assertThrows } from "../testing/assert.ts";
import { isGranted, NetProxy, parseGrant } from "./net_proxy.ts";

Deno.test("parseGrant: host, host:port, [v6]:port; matching is by name and port as written", () => {
  assertEquals(parseGrant("127.0.0.1:8080"), { host: "127.0.0.1", port: 8080 });
  assertEquals(parseGrant("Registry.Example.COM."), { host: "registry.example.com" });
  assertEquals(parseGrant("[::1]:9"), { host: "::1", port: 9 });
  assertThrows(() => parseGrant("a:b:c"));
  const grants = ["127.0.0.1:8080", "mirror.test"].map(parseGrant);
  assert(isGranted(grants, "127.0.0.1", 8080));
  assert(!isGranted(grants, "127.0.0.1", 8081), "the granted host on another port");
  assert(!isGranted(grants, "localhost", 8080), "another name of the same address");
  assert(isGranted(grants, "MIRROR.test.", 443) && isGranted(grants, "mirror.test", 1));
  assert(!isGranted(grants, "evil.mirror.test", 443), "a sub-domain is another host");
});

/** One request through the proxy's HTTP socket; the raw answer. */
async function through(proxy: NetProxy, request: string): Promise<string> {
  const conn = await Deno.connect({ transport: "unix", path: `${proxy.dir}/http.sock` });
  await conn.write(new TextEncoder().encode(request));
  const chunks: string[] = [];
  const buf = new Uint8Array(4096);
  for (let n; (n = await conn.read(buf)) !== null;) {
    chunks.push(new TextDecoder().decode(buf.subarray(0, n)));
  }
  conn.close();
  return chunks.join("");
}

Deno.test("NetProxy: forwards a granted absolute-form request, refuses the rest with 403, cleans up", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    return new Response(`path=${new URL(req.url).pathname}`, { headers: { Connection: "close" } });
  });
  const events: string[] = [];
  const proxy = new NetProxy([`127.0.0.1:${server.addr.port}`], {
    onEvent: (e) => events.push(`${e.host}:${e.port}:${e.allowed}`),
  });
  const ok = await through(
    proxy,
    `GET http://127.0.0.1:${server.addr.port}/x?y HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n`,
  );
  assert(ok.startsWith("HTTP/1.1 200") && ok.endsWith("path=/x"), ok);
  const refused = await through(proxy, `CONNECT 127.0.0.1:1 HTTP/1.1\r\n\r\n`);
  assert(refused.startsWith("HTTP/1.1 403"), refused);
  const bad = await through(proxy, `GET /relative HTTP/1.1\r\n\r\n`);
  assert(bad.startsWith("HTTP/1.1 400"), bad);
  assertEquals(events, [`127.0.0.1:${server.addr.port}:true`, "127.0.0.1:1:false"]);
  proxy.close();
  assert(!(await Deno.stat(proxy.dir).catch(() => false)), "its folder is removed");
  await server.shutdown();
});

Deno.test("NetProxy: a folder that already exists is refused (not someone else's sockets)", () => {
  const dir = Deno.makeTempDirSync();
  try {
    assertThrows(() => new NetProxy(["a.test"], { dir }));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
