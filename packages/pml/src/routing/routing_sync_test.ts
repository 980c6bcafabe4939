import { join } from "node:path";
import { createApp, parseRoutingTable, SqliteStore } from "../../../server/mod.ts";
import { assert, assertEquals } from "../testing/assert.ts";
import { SyncedRouting } from "./routing_sync.ts";

/** The real server app as the cloud; every request it gets is recorded. */
async function fakeCloud(table: unknown) {
  const store = new SqliteStore(":memory:");
  await store.migrate();
  const routing = parseRoutingTable(new TextEncoder().encode(JSON.stringify(table)));
  const app = createApp({ store, routing });
  const seen: Request[] = [];
  const fetchFn = ((input: string | URL | Request, init?: RequestInit) => {
    const req = new Request(input, init);
    seen.push(req);
    return app(req);
  }) as typeof fetch;
  return { fetch: fetchFn, seen, [Symbol.asyncDispose]: () => store.close() };
}

const REMOTE = {
  version: 1,
  client: ["filesystem", "localthing"],
  server: ["json", "newapi", "shell"],
  default: "client",
};

Deno.test("routing sync: fetched in cloud mode, cached with its ETag, revalidated with If-None-Match", async () => {
  await using cloud = await fakeCloud(REMOTE);
  const pmlHome = Deno.makeTempDirSync();
  const deps = { cloudUrl: "http://cloud.test", pmlHome, cloudMode: true, fetch: cloud.fetch };
  const first = new SyncedRouting(deps);
  assertEquals(first.routeOf("newapi:go"), "client", "unknown before the sync");
  await first.sync();
  assertEquals(first.routeOf("newapi:go"), "server");
  assertEquals(first.routeOf("localthing:x"), "client");
  assertEquals(
    first.routeOf("shell:exec"),
    "client",
    "client namespaces of the package stay client",
  );
  const cache = JSON.parse(Deno.readTextFileSync(join(pmlHome, "routing.json")));
  assert(cache.etag);

  const second = new SyncedRouting(deps);
  assertEquals(second.routeOf("newapi:go"), "server", "from the cache, before any request");
  await second.sync();
  assertEquals(cloud.seen.at(-1)!.headers.get("if-none-match"), cache.etag);
  assertEquals(second.routeOf("newapi:go"), "server");

  const otherCloud = new SyncedRouting({ ...deps, cloudUrl: "http://other.test" });
  assertEquals(otherCloud.routeOf("newapi:go"), "client", "a cache of another cloud is not used");
  await Deno.remove(pmlHome, { recursive: true });
});

Deno.test("routing sync: nothing is fetched without an API key; offline keeps the embedded table", async () => {
  await using cloud = await fakeCloud(REMOTE);
  const pmlHome = Deno.makeTempDirSync();
  const local = new SyncedRouting({
    cloudUrl: "http://cloud.test",
    pmlHome,
    cloudMode: false,
    fetch: cloud.fetch,
  });
  await local.sync();
  assertEquals(cloud.seen.length, 0);
  const offline = new SyncedRouting({
    cloudUrl: "http://cloud.test",
    pmlHome,
    cloudMode: true,
    fetch: () => Promise.reject(new TypeError("connection refused")),
  });
  await offline.sync();
  assertEquals(offline.routeOf("json:parse"), "server");
  assertEquals(offline.routeOf("filesystem:read_file"), "client");
  await Deno.remove(pmlHome, { recursive: true });
});
