import { assertEquals, assertRejects } from "../testing/assert.ts";
import { isPmlError } from "../errors.ts";
import { RegistryClient } from "./registry_client.ts";
import { testRegistry } from "./_testing.ts";

const CODE = `export async function hello() { return "hi"; }`;

async function code(p: Promise<unknown>): Promise<string> {
  const err = await assertRejects(() => p);
  return isPmlError(err) ? err.code : `not a PmlError: ${err.message}`;
}

Deno.test("registry client: 302 to the hashed FQDN, If-None-Match → 304", async () => {
  await using reg = await testRegistry();
  const fqdn = await reg.publish("greet", "hello", CODE);
  const client = new RegistryClient({ registries: [reg.url], fetch: reg.fetch });
  const first = await client.fetchEntry(reg.url, "acme.tools.greet.hello");
  assertEquals(first.fqdn, fqdn);
  assertEquals(new TextDecoder().decode(first.bytes), CODE);
  assertEquals(first.type, "deno");
  const again = await client.fetchEntry(reg.url, "acme.tools.greet.hello", first.hex);
  assertEquals(again.bytes, undefined, "304: no body");
  assertEquals(again.hex, first.hex);
  assertEquals((await client.findTool("greet:hello"))?.fqdn, fqdn);
  assertEquals(await client.findTool("greet:nothing"), undefined);
});

Deno.test("registry client: 404, hash mismatch, bytes changed in transit, timeout, unreachable", async () => {
  await using reg = await testRegistry();
  const fqdn = await reg.publish("greet", "hello", CODE);
  const client = new RegistryClient({ registries: [reg.url], fetch: reg.fetch });
  assertEquals(
    await code(client.fetchEntry(reg.url, "acme.tools.nope.nothing")),
    "REGISTRY_NOT_FOUND",
  );
  const wrong = fqdn.slice(0, -4) + (fqdn.endsWith("0000") ? "ffff" : "0000");
  assertEquals(await code(client.fetchEntry(reg.url, wrong)), "REGISTRY_HASH_MISMATCH");
  const mitm = new RegistryClient({
    registries: [reg.url],
    fetch: async (input, init) => {
      const res = await reg.fetch(input, init);
      if (res.status !== 200) return res;
      return new Response(`export async function hello() { return "evil"; }`, {
        headers: res.headers,
      });
    },
  });
  assertEquals(await code(mitm.fetchEntry(reg.url, fqdn)), "REGISTRY_HASH_MISMATCH");
  const hanging = new RegistryClient({
    registries: [reg.url],
    timeoutMs: 50,
    fetch: (_input, init) =>
      new Promise((_, reject) =>
        init!.signal!.addEventListener("abort", () => reject(init!.signal!.reason))
      ),
  });
  assertEquals(await code(hanging.fetchEntry(reg.url, fqdn)), "REGISTRY_TIMEOUT");
  reg.down = true;
  assertEquals(await code(client.findTool("greet:hello")), "REGISTRY_UNREACHABLE");
});

Deno.test("registry client: a redirect to another origin is refused", async () => {
  const client = new RegistryClient({
    registries: ["http://registry.test"],
    fetch: () =>
      Promise.resolve(
        new Response(null, {
          status: 302,
          headers: { location: "http://evil.test/mcp/a.b.c.d.0000" },
        }),
      ),
  });
  assertEquals(
    await code(client.fetchEntry("http://registry.test", "a.b.c.d")),
    "REGISTRY_BAD_RESPONSE",
  );
});
