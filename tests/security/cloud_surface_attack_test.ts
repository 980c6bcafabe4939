/**
 * Attacks on the surface of registry http MCPs proxied by the PML cloud (docs/cloud.md
 * "Resources, prompts and completions"): the real `pml-server` app (`tests/e2e/_cloud.ts`) with
 * server-everything as the http entries `open` (no key) and `upstream` (the BYOK key
 * `UPSTREAM_TOKEN`), reached through a spawned `pml stdio` and, for what a client of the cloud
 * could send itself, straight at the cloud's `/mcp`.
 */
import { assert, assertEquals, assertRejects } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import { startCloud, startUpstream } from "../e2e/_cloud.ts";
import { connectStdio } from "../e2e/_spawn.ts";

const TOKEN = "tok-attack-surface-987";

function cloudEnv(cloud: { url: string; key: string }) {
  return {
    PML_CLOUD_URL: cloud.url,
    PML_API_KEY: cloud.key,
    PML_CLOUD_TIMEOUT_MS: "5000",
    UPSTREAM_TOKEN: TOKEN,
  };
}

Deno.test("attack: a resource URI naming another registry MCP, or one the workspace does not allow, reads nothing of it; denied and asked ids say how to allow", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  // `upstream` is not a server of this workspace: its key is not even listed.
  await using ws = tempWorkspace({
    permissions: { allow: ["open"], ask: ["open:prompt"], deny: [] },
  });
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });

  // The ordinary work still succeeds.
  const listed = (await client.listResources()).resources.map((r) => r.uri);
  assert(listed.includes("demo://open/resource/static/document/architecture.md"), listed.join());
  assert(!listed.some((u) => u.startsWith("demo://upstream/")), "a server not allowed is listed");
  const ok = await client.readResource({ uri: "demo://open/resource/dynamic/text/1" });
  assertEquals(ok.contents[0].uri, "demo://open/resource/dynamic/text/1");

  // A URI of a server the workspace does not allow (nor lists its key): refused, and the cloud
  // is not asked; one of no server at all is unknown.
  const before = cloud.seen.length;
  const refused = await assertRejects(() =>
    client.readResource({ uri: "demo://upstream/resource/dynamic/text/1" })
  );
  assert(String(refused).includes('needs your API key "UPSTREAM_TOKEN"'), String(refused));
  const unknown = await assertRejects(() =>
    client.readResource({ uri: "demo://nosuch/resource/dynamic/text/1" })
  );
  assert(String(unknown).includes("Unknown resource"), String(unknown));
  assert(!cloud.seen.slice(before).some((s) => s.headers["x-pml-server"] === "upstream"));

  // A URI of `open` that names `upstream` is open's own URI: asked of open, never of upstream.
  const upstreamReads = upstream.seen.filter((s) => s.path === "/u/mcp").length;
  await client.readResource({ uri: "demo://open/upstream/resource/dynamic/text/1" }).catch(
    () => {},
  );
  const relayed = cloud.seen.slice(before).filter((s) => s.rpc === "resources/read");
  assert(relayed.length > 0 && relayed.every((s) => s.headers["x-pml-server"] === "open"));
  assert(relayed.every((s) => s.headers["x-pml-byok"] === undefined), "no key for open");
  assertEquals(upstream.seen.filter((s) => s.path === "/u/mcp").length, upstreamReads);

  // An asked prompt without a client that elicits: refused with how to allow it.
  const asked = await assertRejects(() =>
    client.getPrompt({ name: "open__simple-prompt", arguments: {} })
  );
  assert(String(asked).includes('add "open:prompt" to permissions.allow'), String(asked));
});

Deno.test("attack: a denied registry MCP's resources are neither listed nor read", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace({
    permissions: { allow: ["open", "upstream"], ask: [], deny: ["upstream:resource"] },
    env: ["UPSTREAM_TOKEN"],
  });
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });
  const listed = (await client.listResources()).resources.map((r) => r.uri);
  assert(listed.some((u) => u.startsWith("demo://open/")));
  assert(!listed.some((u) => u.startsWith("demo://upstream/")), listed.join(", "));
  const before = cloud.seen.length;
  const denied = await assertRejects(() =>
    client.readResource({ uri: "demo://upstream/resource/dynamic/text/1" })
  );
  assert(String(denied).includes('"upstream:resource" is denied'), String(denied));
  assertEquals(cloud.seen.slice(before).filter((s) => s.rpc === "resources/read"), []);
  // Its prompts are another id, still allowed.
  const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  assert(prompts.includes("upstream__simple-prompt"), prompts.join(", "));
});

/** An SDK client straight at the cloud's relay of `server`, with these extra headers. */
async function atCloud(
  cloud: { url: string; key: string },
  server: string,
  headers: Record<string, string> = {},
): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${cloud.url}/mcp`), {
    requestInit: {
      headers: { authorization: `Bearer ${cloud.key}`, "x-pml-server": server, ...headers },
    },
  });
  const client = new Client({ name: "attacker", version: "1" }, { capabilities: {} });
  await client.connect(transport);
  return client;
}

const byok = (values: Record<string, string>) => btoa(JSON.stringify(values));

Deno.test("attack: straight at the cloud, a server without its key, a namespace that is no http MCP, and a key echoed by the server", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  const upstreamRequests = () => upstream.seen.filter((s) => s.path === "/u/mcp").length;

  // No key: refused before anything is sent to the server that needs it.
  const before = upstreamRequests();
  const noKey = await assertRejects(() => atCloud(cloud, "upstream"));
  assert(String(noKey).includes("API_KEY_REQUIRED"), String(noKey));
  assert(String(noKey).includes("UPSTREAM_TOKEN"), String(noKey));
  assertEquals(upstreamRequests(), before);

  // Another user's key on the same server reaches nothing of it: refused the same way.
  const wrongVar = await assertRejects(() =>
    atCloud(cloud, "upstream", { "x-pml-byok": byok({ OTHER: TOKEN }) })
  );
  assert(String(wrongVar).includes("API_KEY_REQUIRED"), String(wrongVar));

  // A platform namespace (computed by the cloud, no server behind it), and one that does not exist.
  for (const ns of ["json", "nosuch", "../admin"]) {
    const refused = await assertRejects(() => atCloud(cloud, ns));
    assert(String(refused).includes("No HTTP MCP"), String(refused));
  }

  // With the key: the server's answers and errors never carry it back, even when they echo it.
  const client = await atCloud(cloud, "upstream", {
    "x-pml-byok": byok({ UPSTREAM_TOKEN: TOKEN }),
  });
  try {
    assert(client.getServerCapabilities()?.resources !== undefined);
    const echoed = await client.readResource({ uri: `demo://resource/dynamic/text/${TOKEN}` })
      .then((r) => JSON.stringify(r), (e) => String(e));
    assert(!echoed.includes(TOKEN), echoed);
    assert(echoed.includes("[redacted]"), echoed);
    const prompt = await client.getPrompt({
      name: "args-prompt",
      arguments: { city: TOKEN, state: "x" },
    });
    const text = JSON.stringify(prompt);
    assert(!text.includes(TOKEN) && text.includes("[redacted]"), text);
    const atServer = upstream.seen.filter((s) => s.path === "/u/mcp" && s.rpc === "prompts/get");
    assert(atServer.every((s) => s.headers.authorization === `Bearer ${TOKEN}`));
  } finally {
    await client.close();
  }
});
