/**
 * mcp-remote (the stdio bridge many clients use for remote MCP servers), pinned in package.json,
 * against a real `pml-server` on loopback. Without a key it must not go into OAuth discovery
 * (it did: "Dynamic Client Registration rejected … No route for POST /register") and the user must
 * read why the server refused; with the key, the ordinary work goes through.
 */
import { join } from "node:path";
import { Client } from "../../../packages/pml/src/sdk/client.ts";
import { StdioClientTransport } from "../../../packages/pml/src/sdk/stdio_client.ts";
import {
  assert,
  assertEquals,
  assertStringIncludes,
} from "../../../packages/pml/src/testing/assert.ts";
import { startCloud } from "../_cloud.ts";

const ROOT = join(import.meta.dirname!, "..", "..", "..");
const MCP_REMOTE = join(ROOT, "node_modules", "mcp-remote", "dist", "proxy.js");
const NO_UPSTREAM = "http://127.0.0.1:9"; // the cloud's http entries exist but are never called

function node(): string {
  return new TextDecoder().decode(
    new Deno.Command("sh", { args: ["-c", "command -v node"] }).outputSync().stdout,
  ).trim();
}

/** An SDK client talking to `mcp-remote URL [--header …]` over stdio; its stderr is collected. */
async function viaMcpRemote(url: string, headers: Record<string, string>) {
  const home = Deno.makeTempDirSync({ prefix: "pml-mcp-remote-" });
  const transport = new StdioClientTransport({
    command: node(),
    args: [
      MCP_REMOTE,
      url,
      "--transport",
      "http-only",
      "--allow-http",
      ...Object.entries(headers).flatMap(([k, v]) => ["--header", `${k}:${v}`]),
    ],
    // No browser to open: a client that went for OAuth would try one.
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: home, BROWSER: "true" },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => stderr += new TextDecoder().decode(chunk));
  const client = new Client({ name: "mcp-remote-test", version: "1" });
  const connected = await client.connect(transport).then(() => true, (e: Error) => e);
  return {
    client,
    connected,
    stderr: () => stderr,
    async close() {
      await client.close().catch(() => {});
      await transport.close().catch(() => {});
      await Deno.remove(home, { recursive: true }).catch(() => {});
    },
  };
}

Deno.test("mcp-remote without a key: no OAuth discovery, and the user reads the missing API key", async () => {
  await using cloud = await startCloud(NO_UPSTREAM);
  const remote = await viaMcpRemote(`${cloud.url}/mcp`, {});
  try {
    assert(remote.connected !== true, "initialize must fail without a key");
    // mcp-remote prints why, from the server's JSON-RPC error body.
    for (let i = 0; i < 50 && !remote.stderr().includes("Missing API key"); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    assertStringIncludes(remote.stderr(), "Missing API key");
    assertStringIncludes(remote.stderr(), "Authorization:Bearer <key>");
    assert(!/Dynamic Client Registration/i.test(remote.stderr()), remote.stderr());
    // mcp-remote 0.15 looks for OAuth metadata at start whatever the server says (those GETs get
    // the 404 below); what the 401 used to add is registration, then a browser.
    const registered = cloud.seen.filter((s) => s.method === "POST" && s.path !== "/mcp");
    assertEquals(registered.map((s) => `${s.method} ${s.path}`), [], "no client registration");
  } finally {
    await remote.close();
  }
});

Deno.test("mcp-remote with --header Authorization: tools/list and a cloud tool work", async () => {
  await using cloud = await startCloud(NO_UPSTREAM);
  const remote = await viaMcpRemote(`${cloud.url}/mcp`, { Authorization: `Bearer ${cloud.key}` });
  try {
    assertEquals(remote.connected, true, remote.stderr());
    const names = (await remote.client.listTools()).tools.map((t) => t.name);
    assert(names.includes("json__parse"), names.join());
    const r = await remote.client.callTool({ name: "json__parse", arguments: { text: "[1]" } });
    assertEquals((r as { structuredContent?: unknown }).structuredContent, { result: [1] });
  } finally {
    await remote.close();
  }
});

Deno.test("pml-server: the OAuth discovery paths are clear 404s that say how to authenticate", async () => {
  await using cloud = await startCloud(NO_UPSTREAM);
  for (
    const [method, path] of [
      ["GET", "/.well-known/oauth-protected-resource/mcp"],
      ["GET", "/.well-known/oauth-authorization-server"],
      ["POST", "/register"],
    ]
  ) {
    const res = await fetch(`${cloud.url}${path}`, {
      method,
      body: method === "POST" ? "{}" : undefined,
    });
    assertEquals(res.status, 404, path);
    const body = await res.json();
    assertEquals(body.error, "oauth_not_supported", path);
    assertStringIncludes(body.message, "does not use OAuth");
    assertStringIncludes(body.message, "Authorization: Bearer <key>");
  }
});
