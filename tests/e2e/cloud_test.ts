/**
 * End to end: `bin/pml stdio` in cloud mode against a real `pml-server` on loopback, whose `http`
 * registry entries proxy a real remote MCP server (server-everything over Streamable HTTP).
 */
import {
  assert,
  assertEquals,
  assertRejects,
  assertStringIncludes,
} from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { decodeByok, startCloud, startUpstream } from "./_cloud.ts";
import { connectStdio } from "./_spawn.ts";
import { cloudTools } from "./clients/_cloud_tools.ts";

const text = (r: unknown) =>
  ((r as { content: { text?: string }[] }).content ?? []).map((c) => c.text ?? "").join("");

const PML_JSON = {
  permissions: { allow: ["filesystem", "json", "upstream", "open"], ask: [], deny: [] },
  env: ["UPSTREAM_TOKEN", "OTHER_SECRET"],
};

function cloudEnv(cloud: { url: string; key: string }, extra: Record<string, string> = {}) {
  return {
    PML_CLOUD_URL: cloud.url,
    PML_API_KEY: cloud.key,
    PML_CLOUD_TIMEOUT_MS: "3000",
    UPSTREAM_TOKEN: "tok-upstream-123",
    OTHER_SECRET: "other-secret-456",
    ...extra,
  };
}

Deno.test("e2e cloud: local calls stay local; cloud calls carry the key and X-PML-Client; BYOK only for the tool that declares it", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace(PML_JSON);
  ws.write("notes.txt", "local notes");
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });

  const tools = (await client.listTools()).tools;
  const names = tools.map((t) => t.name);
  for (const n of ["pml__search", "filesystem__read_file", "json__parse", "upstream__echo"]) {
    assert(names.includes(n), `${n} in ${names.join(", ")}`);
  }
  // PML's search only reads; the cloud's pure tools carry the hints pml-server states for them
  // (Codex runs read-only tools without its own approval); an HTTP API tool carries none.
  const annotationsOf = (name: string) => tools.find((t) => t.name === name)!.annotations;
  assertEquals(annotationsOf("pml__search"), { readOnlyHint: true });
  assertEquals(annotationsOf("json__parse"), {
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  });
  assertEquals(annotationsOf("upstream__echo"), undefined);

  const before = cloud.seen.length;
  const read = await client.callTool({
    name: "filesystem__read_file",
    arguments: { path: "notes.txt" },
  });
  assertEquals(text(read), "local notes");
  assertEquals(cloud.seen.length, before, "a local call must not reach the cloud");

  const echoed = await client.callTool({
    name: "upstream__echo",
    arguments: { message: "hello upstream" },
  });
  assert(!echoed.isError, text(echoed));
  assertStringIncludes(text(echoed), "hello upstream");
  const upCall = cloud.calls().at(-1)!;
  assertEquals(upCall.tool?.replace("__", ":"), "upstream:echo");
  assertEquals(upCall.headers["authorization"], `Bearer ${cloud.key}`);
  assertEquals(upCall.headers["x-pml-client"], "package");
  assertEquals(decodeByok(upCall.headers["x-pml-byok"]), { UPSTREAM_TOKEN: "tok-upstream-123" });
  const atUpstream = upstream.seen.filter((s) => s.path === "/u/mcp" && s.rpc === "tools/call");
  assertEquals(atUpstream.length, 1);
  assertEquals(atUpstream[0].headers["authorization"], "Bearer tok-upstream-123");

  const open = await client.callTool({ name: "open__echo", arguments: { message: "hi open" } });
  assertStringIncludes(text(open), "hi open");
  assertEquals(cloud.calls().at(-1)!.headers["x-pml-byok"], undefined);
  for (const s of upstream.seen.filter((s) => s.path === "/o/mcp")) {
    assertEquals(s.headers["authorization"], undefined);
  }
  // No secret travels anywhere else: not in any other request to the cloud or the upstream.
  for (const s of [...cloud.seen, ...upstream.seen]) {
    const headers = JSON.stringify(s.headers);
    assert(!headers.includes("other-secret-456"), `${s.method} ${s.path}`);
    if (s !== upCall && !(s.path === "/u/mcp")) assert(!headers.includes("tok-upstream-123"));
  }

  const search = await client.callTool({ name: "pml__search", arguments: { query: "echo" } });
  assert(!search.isError, text(search));
  assertStringIncludes(text(search), "echo");
});

Deno.test("e2e cloud: BYOK keys listed in .pml.json come from the workspace .env too (the environment wins; no other name)", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace(PML_JSON);
  ws.write(".env", "UPSTREAM_TOKEN=tok-from-dotenv\nNOT_LISTED=dotenv-unlisted-789\n");
  const { UPSTREAM_TOKEN: _, ...withoutToken } = cloudEnv(cloud);
  {
    await using client = await connectStdio(ws, { env: withoutToken });
    const echoed = await client.callTool({ name: "upstream__echo", arguments: { message: "m" } });
    assert(!echoed.isError, text(echoed));
    assertEquals(decodeByok(cloud.calls().at(-1)!.headers["x-pml-byok"]), {
      UPSTREAM_TOKEN: "tok-from-dotenv",
    });
  }
  {
    await using client = await connectStdio(ws, { env: cloudEnv(cloud) });
    const echoed = await client.callTool({ name: "upstream__echo", arguments: { message: "m" } });
    assert(!echoed.isError, text(echoed));
    assertEquals(decodeByok(cloud.calls().at(-1)!.headers["x-pml-byok"]), {
      UPSTREAM_TOKEN: "tok-upstream-123",
    });
  }
  for (const s of [...cloud.seen, ...upstream.seen]) {
    assert(!JSON.stringify(s.headers).includes("dotenv-unlisted-789"), `${s.method} ${s.path}`);
  }
});

Deno.test("e2e cloud: a server-routed std tool (json:parse) runs on the cloud, with the key and no BYOK", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace(PML_JSON);
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });
  const parsed = await client.callTool({ name: "json:parse", arguments: { text: '{"a":[1,2]}' } });
  assert(!parsed.isError, text(parsed));
  assertStringIncludes(text(parsed), '"a"');
  const jsonCall = cloud.calls().at(-1);
  assertEquals(
    jsonCall?.tool?.replace("__", ":"),
    "json:parse",
    "json routes to the server (DESIGN §6)",
  );
  assertEquals(jsonCall.headers["authorization"], `Bearer ${cloud.key}`);
  assertEquals(jsonCall.headers["x-pml-client"], "package");
  assertEquals(jsonCall.headers["x-pml-byok"], undefined, "json:parse declares no key");
});

Deno.test("e2e cloud: a declared variable missing from .pml.json env is named with how to set it", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace({ ...PML_JSON, env: [] });
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });
  const r = await client.callTool({ name: "upstream:echo", arguments: { message: "x" } });
  assert(r.isError);
  assertStringIncludes(text(r), "UPSTREAM_TOKEN");
  assertStringIncludes(text(r), ".pml.json");
  assertEquals(cloud.calls().length, 0, "nothing was sent");
});

Deno.test("e2e cloud: a missing BYOK key of an ask tool is the answer at once, before any approval", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace({
    permissions: { allow: [], ask: ["upstream"], deny: [] },
    env: ["UPSTREAM_TOKEN"],
  });
  const { UPSTREAM_TOKEN: _, ...withoutToken } = cloudEnv(cloud);
  await using client = await connectStdio(ws, { env: withoutToken });
  const r = await client.callTool({ name: "upstream:echo", arguments: { message: "x" } });
  assert(r.isError, text(r));
  assertEquals((r.structuredContent as { code?: string }).code, "BYOK_MISSING");
  assertStringIncludes(text(r), "UPSTREAM_TOKEN");
  assertStringIncludes(text(r), ".env");
  assertEquals(cloud.calls().length, 0, "nothing was sent");
});

Deno.test("e2e cloud: without PML_API_KEY cloud tools say so, local tools work, the cloud sees nothing", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace(PML_JSON);
  ws.write("a.txt", "A");
  await using client = await connectStdio(ws, {
    env: { ...cloudEnv(cloud), PML_API_KEY: "" },
  });
  const r = await client.callTool({ name: "json:parse", arguments: { text: "1" } });
  assert(r.isError);
  assertStringIncludes(text(r), "Cloud mode requires PML_API_KEY");
  assertEquals(
    text(await client.callTool({ name: "filesystem:read_file", arguments: { path: "a.txt" } })),
    "A",
  );
  assertEquals(cloud.seen.length, 0);
});

Deno.test("e2e cloud: cloud killed mid-session → local works, cloud tools fail clearly; back → works again", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace(PML_JSON);
  ws.write("a.txt", "A");
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });
  const call = () => client.callTool({ name: "open:echo", arguments: { message: "ping" } });
  assert(!(await call()).isError);

  await cloud.stop();
  const down = await call();
  assert(down.isError);
  assertStringIncludes(text(down), "unreachable");
  assertStringIncludes(text(down), "Local tools keep working");
  assertEquals(
    text(await client.callTool({ name: "filesystem:read_file", arguments: { path: "a.txt" } })),
    "A",
  );
  const names = (await client.listTools()).tools.map((t) => t.name);
  assert(names.includes("filesystem__read_file"));

  cloud.start();
  const back = await call();
  assert(!back.isError, text(back));
});

/**
 * A loopback server that accepts connections and never answers; `run` gets `pml stdio` in cloud
 * mode against it (the cloud URL is also the registry, as by default), with `env` added.
 */
async function withSilentCloud(
  env: Record<string, string>,
  run: (client: Awaited<ReturnType<typeof connectStdio>>) => Promise<void>,
) {
  const silent = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const c of silent) held.push(c);
  })();
  try {
    await using ws = tempWorkspace(PML_JSON);
    ws.write("a.txt", "A");
    await using client = await connectStdio(ws, {
      env: {
        PML_CLOUD_URL: `http://127.0.0.1:${(silent.addr as Deno.NetAddr).port}`,
        PML_API_KEY: "pml_whatever",
        ...env,
      },
    });
    await run(client);
  } finally {
    silent.close();
    for (const c of held) c.close();
    await accepting.catch(() => {});
  }
}

/** The local read still works. */
async function assertLocalRead(client: Awaited<ReturnType<typeof connectStdio>>) {
  const read = await client.callTool({
    name: "filesystem:read_file",
    arguments: { path: "a.txt" },
  });
  assertEquals(text(read), "A");
}

Deno.test("e2e cloud: a cloud that accepts connections but never answers gives a bounded offline error", async () => {
  await withSilentCloud({ PML_CLOUD_TIMEOUT_MS: "1500" }, async (client) => {
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert(names.includes("filesystem__read_file"));
    const r = await client.callTool({ name: "json:parse", arguments: { text: "1" } });
    assert(r.isError);
    assertStringIncludes(text(r), "did not answer within 2 s");
    await assertLocalRead(client);
  });
});

Deno.test("e2e cloud: a silent cloud that is also the registry, default bounds: every tools/list returns the local tools, a cloud call says it did not answer within 10 s", async () => {
  // No PML_CLOUD_TIMEOUT_MS: the documented defaults (a list waits at most 2 s, once; a call's
  // cloud bound is 10 s).
  await withSilentCloud({}, async (client) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const work = (async () => {
      for (let i = 0; i < 3; i++) {
        const names = (await client.listTools()).tools.map((t) => t.name);
        assert(names.includes("filesystem__read_file"), names.join());
      }
      const r = await client.callTool({ name: "json__parse", arguments: { text: "1" } });
      assert(r.isError);
      assertStringIncludes(text(r), "did not answer within 10 s");
      await assertLocalRead(client);
    })();
    // A generous bound, not a timing: the lists and the call together take about 10 s; each list
    // used to wait 10 s for the registry and the call 20 s (50 s in all).
    const bound = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error("3 tools/list and a cloud call took more than 30 s")),
        30_000,
      );
    });
    try {
      await Promise.race([work, bound]);
    } finally {
      clearTimeout(timer);
    }
  });
});

Deno.test("e2e cloud: with the policy pml init writes (json, math, text, pml:search allowed) the cloud tools carry pml-server's own descriptions and schemas; an unlisted http tool is asked; an unknown one is unknown before any question", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace({
    permissions: { allow: ["json", "math", "text", "pml:search"], ask: [], deny: [] },
  });
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });
  const reference = await cloudTools(cloud);
  const listed = (await client.listTools()).tools;
  const server = (name: string) => /^(json|math|text)__/.test(name) || name === "pml__search";
  assertEquals(
    listed.map((t) => t.name).filter(server).sort(),
    [...reference.keys()].filter(server).sort(),
  );
  for (const tool of listed.filter((t) => server(t.name))) {
    const real = reference.get(tool.name)!;
    assertEquals(tool.inputSchema, real.inputSchema, tool.name);
    assertEquals(tool.description, real.description, tool.name);
  }
  const sumSchema = listed.find((t) => t.name === "math__sum")!.inputSchema;
  assert(sumSchema.properties && "numbers" in sumSchema.properties, JSON.stringify(sumSchema));
  const sum = await client.callTool({ name: "math__sum", arguments: { numbers: [1, 2, 3] } });
  assert(!sum.isError, text(sum));
  assertStringIncludes(text(sum), "6");

  // `open` (an http MCP of the registry) is named by no permission: not listed, asked when called.
  assert(!listed.some((t) => t.name === "open__echo"));
  const asked = await client.callTool({ name: "open__echo", arguments: { message: "hi" } });
  assertEquals(
    (asked.structuredContent as { status?: string })?.status,
    "approval_required",
    text(asked),
  );

  const before = cloud.calls().length;
  for (const name of ["json__nosuch", "pml__nosuch", "json:nosuch"]) {
    const err = await assertRejects(() => client.callTool({ name, arguments: {} })) as Error;
    assertStringIncludes(err.message, `Unknown tool "${name}"`);
    assertEquals(err.message.match(/MCP error -32602/g)?.length, 1, err.message);
  }
  assertEquals(cloud.calls().length, before, "unknown tools never reach the cloud");
});

Deno.test("e2e cloud: a pml started while the cloud is down lists the cloud tools of its last run with their real schemas (kept in ~/.pml); calls say the cloud is unreachable, unknown ids stay unknown", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace({
    permissions: { allow: ["json", "math"], ask: [], deny: [] },
  });
  const first = await connectStdio(ws, { env: cloudEnv(cloud) });
  const seen = (await first.listTools()).tools.find((t) => t.name === "json__parse");
  assert(seen, "listed while the cloud is up");
  await first.close();
  await cloud.stop();

  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });
  const again = (await client.listTools()).tools.find((t) => t.name === "json__parse");
  assertEquals(again?.inputSchema, seen.inputSchema);
  assertEquals(again?.description, seen.description);
  const r = await client.callTool({ name: "json__parse", arguments: { text: "1" } });
  assert(r.isError);
  assertStringIncludes(text(r), "is unreachable");
  const err = await assertRejects(() =>
    client.callTool({ name: "math__nosuch", arguments: {} })
  ) as Error;
  assertStringIncludes(err.message, 'Unknown tool "math__nosuch"');
});

Deno.test("e2e cloud: arguments a tool cannot take are INVALID_ARGUMENTS wherever it runs (a cloud math:sum, a local read), as a result and inside pml:execute", async () => {
  await using upstream = await startUpstream();
  await using cloud = await startCloud(upstream.url);
  await using ws = tempWorkspace({
    permissions: { allow: ["filesystem", "math"], ask: [], deny: [] },
  });
  await using client = await connectStdio(ws, { env: cloudEnv(cloud) });
  const codeOf = (r: unknown) =>
    ((r as { structuredContent?: { code?: string } }).structuredContent ?? {}).code;
  const remote = await client.callTool({ name: "math:sum", arguments: { numbers: "x" } });
  assertEquals(cloud.calls().at(-1)?.tool?.replace("__", ":"), "math:sum", "it ran on the cloud");
  const local = await client.callTool({
    name: "filesystem:read_file",
    arguments: { path: 5 },
  });
  assert(remote.isError && local.isError, text(remote) + text(local));
  assertEquals(codeOf(local), "INVALID_ARGUMENTS", text(local));
  assertEquals(codeOf(remote), "INVALID_ARGUMENTS", text(remote));
  assertStringIncludes(text(remote), 'Invalid arguments for \\"math:sum\\"');
  const inCode = await client.callTool({
    name: "pml:execute",
    arguments: { code: 'return await mcp.math.sum({ numbers: "x" });' },
  });
  assertEquals(codeOf(inCode), "INVALID_ARGUMENTS", text(inCode));
});
