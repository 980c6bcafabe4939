import { assertEquals } from "../testing/assert.ts";
import { createRoutingResolver, resolveRouting } from "./routing.ts";

Deno.test("routing: platform table, unknown → client", () => {
  const r = createRoutingResolver();
  assertEquals(r.routeOf("filesystem:read_file"), "client");
  assertEquals(r.routeOf("shell:exec"), "client");
  assertEquals(r.routeOf("json:parse"), "server");
  assertEquals(r.routeOf("tavily:search"), "server");
  assertEquals(r.routeOf("never_heard_of:it"), "client");
});

Deno.test("resolveRouting: client if any tool is client", () => {
  assertEquals(resolveRouting(["json:parse", "math:add"]), "server");
  assertEquals(resolveRouting(["json:parse", "filesystem:read_file"]), "client");
  assertEquals(resolveRouting([]), "server");
});

Deno.test("routing: a custom table", () => {
  const r = createRoutingResolver({
    version: 2,
    client: [],
    server: ["filesystem"],
    default: "client",
  });
  assertEquals(r.routeOf("filesystem:read_file"), "server");
});
