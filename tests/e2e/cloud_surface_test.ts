/**
 * End to end, a registry http MCP proxied by the PML cloud: the real `pml-server` app
 * (`createApp`, `_cloud.ts`) registers server-everything (Streamable HTTP) as the http entries
 * `open` (no key) and `upstream` (the BYOK key `UPSTREAM_TOKEN`). An SDK client reads its
 * resources, templates, reads, prompts, a prompt with arguments and a completion through a spawned
 * `pml stdio` and `pml serve`, and the same client reads them from server-everything direct: once
 * PML's names are read back (docs/surface.md), every answer is the same (docs/cloud.md).
 */
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { Client } from "../../packages/pml/src/sdk/client.ts";
import type { Transport } from "../../packages/pml/src/sdk/transport.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import { fromPmlUri } from "../../packages/pml/src/targets/upstream/resource_uri.ts";
import { decodeByok, startCloud, startUpstream } from "./_cloud.ts";
import { connectStdio } from "./_spawn.ts";
import { spawnServe } from "./_serve.ts";

const TOKEN = "tok-upstream-surface-123";

/** What the client sees of the surface, in the server's own terms. */
async function surfaceOf(client: Client, server?: string) {
  const own = (uri: string) => {
    if (!server) return uri;
    const parsed = fromPmlUri(uri);
    assertEquals(parsed?.server, server, `${uri} reads back to ${server}`);
    return parsed!.uri;
  };
  const pml = (uri: string) => server ? uri.replace("://", `://${server}/`) : uri;
  const prompt = (name: string) => server ? `${server}__${name}` : name;
  const resources = (await client.listResources()).resources
    .filter((r) => !server || fromPmlUri(r.uri)?.server === server)
    .map((r) => ({ ...r, uri: own(r.uri) }));
  const templates = (await client.listResourceTemplates()).resourceTemplates
    .filter((t) => !server || fromPmlUri(t.uriTemplate)?.server === server)
    .map((t) => ({ ...t, uriTemplate: own(t.uriTemplate) }));
  const read = async (uri: string) =>
    (await client.readResource({ uri: pml(uri) })).contents.map((c) => ({
      ...c,
      uri: own(c.uri),
      // A dynamic resource says when it was made.
      ...("text" in c ? { text: c.text.replace(/\d+:\d+:\d+ [AP]M/, "(time)") } : {}),
    }));
  const prompts = (await client.listPrompts()).prompts
    .filter((p) => !server || p.name.startsWith(`${server}__`))
    .map(({ title: _, ...p }) => ({
      ...p,
      name: server ? p.name.slice(server.length + 2) : p.name,
    }));
  return {
    resources,
    templates,
    staticRead: await read("demo://resource/static/document/architecture.md")
      .catch(() => read(resources[0].uri)),
    templatedRead: await read("demo://resource/dynamic/text/1"),
    prompts,
    promptGet: (await client.getPrompt({
      name: prompt("args-prompt"),
      arguments: { city: "Lyon", state: "Rhône" },
    })).messages,
    completion: (await client.complete({
      ref: { type: "ref/prompt", name: prompt("completable-prompt") },
      argument: { name: "department", value: "E" },
    })).completion.values,
  };
}

async function connected(transport: Transport): Promise<Client & AsyncDisposable> {
  const client = new Client({ name: "e2e", version: "1" }, { capabilities: {} });
  await client.connect(transport);
  return Object.assign(client, { [Symbol.asyncDispose]: () => client.close() });
}

Deno.test("e2e cloud surface: a registry http MCP's resources, templates, reads, prompts, prompt get and completions through pml stdio and pml serve, as direct", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace({
    permissions: { allow: ["open", "upstream"], ask: [], deny: [] },
    env: ["UPSTREAM_TOKEN"],
  });
  const env = { ...cloud.env, UPSTREAM_TOKEN: TOKEN };

  let direct;
  {
    await using client = await connected(
      new StreamableHTTPClientTransport(new URL(`${upstream.url}/o/mcp`)),
    );
    direct = await surfaceOf(client);
  }
  assert(direct.resources.length > 0 && direct.templates.length > 0, "the probe itself works");
  assert(direct.completion.includes("Engineering"));

  {
    await using client = await connectStdio(ws, { env });
    const caps = client.getServerCapabilities();
    assert(caps?.resources && caps.prompts && caps.completions, JSON.stringify(caps));
    assertEquals(await surfaceOf(client, "open"), direct, "pml stdio → cloud → open");
    assertEquals(await surfaceOf(client, "upstream"), direct, "pml stdio → cloud → upstream");
  }
  {
    await using serve = await spawnServe(ws, env);
    await using client = await connected(new StreamableHTTPClientTransport(new URL(serve.url)));
    assertEquals(await surfaceOf(client, "open"), direct, "pml serve → cloud → open");
    assertEquals(await surfaceOf(client, "upstream"), direct, "pml serve → cloud → upstream");
  }

  // Each server's requests went to the cloud's relay of that server, each with its own keys only.
  const relayed = cloud.seen.filter((s) => s.headers["x-pml-server"]);
  for (const server of ["open", "upstream"]) {
    const of = relayed.filter((s) => s.headers["x-pml-server"] === server);
    const methods = new Set(of.map((s) => s.rpc));
    for (const m of ["resources/read", "prompts/get", "completion/complete"]) {
      assert(methods.has(m), `${m} relayed for ${server}: ${[...methods].join(", ")}`);
    }
    for (const s of of) {
      assertEquals(s.headers.authorization, `Bearer ${cloud.key}`);
      const byok = decodeByok(s.headers["x-pml-byok"]);
      assertEquals(byok, server === "upstream" ? { UPSTREAM_TOKEN: TOKEN } : undefined);
    }
  }
  // The key reached the upstream of the entry that declares it, and no other.
  const atUpstream = upstream.seen.filter((s) => s.rpc === "resources/read");
  assert(
    atUpstream.some((s) => s.path === "/u/mcp" && s.headers.authorization === `Bearer ${TOKEN}`),
  );
  for (const s of upstream.seen.filter((s) => s.path === "/o/mcp")) {
    assertEquals(s.headers.authorization, undefined);
  }
});
