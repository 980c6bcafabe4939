/**
 * End to end, as a user who moves servers behind PML: server-everything, over stdio (an `npx -y`
 * entry) and over Streamable HTTP (a `url` entry), brought with `bin/pml import`, then probed
 * feature by feature (`_surface_probe.ts`) by an SDK client through a spawned `pml stdio` and
 * `pml serve`, and the same client on the server direct. Every row must match (docs/surface.md,
 * "Compared with the server direct", prints the table this test prints).
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { assert, assertEquals } from "../../packages/pml/src/testing/assert.ts";
import { tempWorkspace } from "../../packages/pml/src/testing/workspace.ts";
import { StdioClientTransport } from "../../packages/pml/src/sdk/stdio_client.ts";
import { StreamableHTTPClientTransport } from "../../packages/pml/src/sdk/http_client.ts";
import { startEverything } from "../../packages/server/tests/upstream.ts";
import { PML_BIN, pmlEnv, runPml } from "./_spawn.ts";
import { spawnServe } from "./_serve.ts";
import { probe, table } from "./_surface_probe.ts";

const ROOT = join(import.meta.dirname!, "..", "..");
const EVERYTHING = join(ROOT, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const PACKAGE = "@modelcontextprotocol/server-everything@2026.8.31";

/** npm's own cache: the test's HOME is private (as in import_test.ts). */
const NPM_CACHE = new TextDecoder().decode(
  new Deno.Command("npm", { args: ["config", "get", "cache"], stdout: "piped" }).outputSync()
    .stdout,
).trim();

Deno.test("e2e surface: server-everything brought with pml import, over stdio and Streamable HTTP, through pml stdio and pml serve, feature by feature as direct", async () => {
  const http = await startEverything();
  try {
    await using ws = tempWorkspace({
      permissions: {
        allow: ["everything", "everything_http", "sampling:everything", "sampling:everything_http"],
        ask: [],
        deny: [],
      },
    });
    ws.write(
      ".mcp.json",
      JSON.stringify({
        mcpServers: {
          everything: { type: "stdio", command: "npx", args: ["-y", PACKAGE] },
          everything_http: { type: "http", url: http.url },
        },
      }),
    );
    const env = { npm_config_cache: NPM_CACHE };
    const imported = await runPml(ws, ["import", "--from", "claude", "--yes"], env);
    assertEquals(imported.code, 0, imported.text);

    const root = pathToFileURL(ws.dir).href;
    const pmlStdio = () =>
      new StdioClientTransport({
        command: PML_BIN,
        args: ["stdio"],
        cwd: ws.dir,
        env: pmlEnv(ws, env),
        stderr: "ignore",
      });
    const rows: Record<string, Awaited<ReturnType<typeof probe>>> = {};
    rows["direct (stdio)"] = await probe(
      new StdioClientTransport({
        command: "node",
        args: [EVERYTHING, "stdio"],
        env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" },
        stderr: "ignore",
      }),
      { prefix: "" },
      root,
    );
    rows["direct (HTTP)"] = await probe(
      new StreamableHTTPClientTransport(new URL(http.url)),
      { prefix: "" },
      root,
    );
    rows["pml stdio → stdio"] = await probe(pmlStdio(), { prefix: "everything__" }, root);
    rows["pml stdio → HTTP"] = await probe(pmlStdio(), { prefix: "everything_http__" }, root);
    {
      await using serve = await spawnServe(ws, env);
      const url = new URL(serve.url);
      rows["pml serve → stdio"] = await probe(
        new StreamableHTTPClientTransport(url),
        { prefix: "everything__" },
        root,
      );
      rows["pml serve → HTTP"] = await probe(
        new StreamableHTTPClientTransport(url),
        { prefix: "everything_http__" },
        root,
      );
    }
    // `PML_SURFACE_TABLE=<file>` writes the table docs/surface.md shows.
    const out = Deno.env.get("PML_SURFACE_TABLE");
    if (out) Deno.writeTextFileSync(out, table(rows) + "\n");
    for (const direct of ["direct (stdio)", "direct (HTTP)"]) {
      const missing = Object.entries(rows[direct]).filter(([, ok]) => !ok).map(([f]) => f);
      assertEquals(missing, [], `${direct}: the probe itself works`);
    }
    assertEquals(rows["pml stdio → stdio"], rows["direct (stdio)"]);
    assertEquals(rows["pml serve → stdio"], rows["direct (stdio)"]);
    assertEquals(rows["pml stdio → HTTP"], rows["direct (HTTP)"]);
    assertEquals(rows["pml serve → HTTP"], rows["direct (HTTP)"]);
  } finally {
    await http.close();
  }
});

const INSPECTOR_BIN = join(ROOT, "node_modules", ".bin", "mcp-inspector-cli");
/** Inspector CLI 1.0.3 starts only from a folder whose parent holds a package.json (inspector_test.ts). */
const INSPECTOR_CWD = join(ROOT, "node_modules", "@modelcontextprotocol", "inspector-cli", "build");

/** Runs `mcp-inspector-cli --cli` with `methodArgs` against `target` (pml stdio, or a URL). */
async function inspector(
  target: { command: string[]; env: Record<string, string> } | { url: string },
  methodArgs: string[],
  home: string,
): Promise<{ json?: Record<string, unknown>; out: string }> {
  const args = "url" in target ? ["--cli", ...methodArgs, target.url, "--transport", "http"] : [
    "--cli",
    ...Object.entries(target.env).flatMap(([k, v]) => ["-e", `${k}=${v}`]),
    ...methodArgs,
    "--",
    ...target.command,
  ];
  const out = await new Deno.Command(INSPECTOR_BIN, {
    args,
    cwd: INSPECTOR_CWD,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: home },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  const stdout = dec.decode(out.stdout);
  let json: Record<string, unknown> | undefined;
  try {
    json = JSON.parse(stdout);
  } catch { /* said in `out` */ }
  return { json, out: `exit ${out.code}\n${stdout}\n${dec.decode(out.stderr)}` };
}

Deno.test("e2e surface, a real client: the MCP Inspector CLI lists and reads resources and gets prompts of server-everything through pml stdio and pml serve", async () => {
  const http = await startEverything();
  try {
    await using ws = tempWorkspace({
      permissions: { allow: ["everything"], ask: [], deny: [] },
      private_mcps: { everything: { type: "http", proxyTo: http.url } },
    });
    await using serve = await spawnServe(ws);
    const targets = {
      stdio: { command: [PML_BIN, "stdio"], env: { PML_WORKSPACE: ws.dir } },
      serve: { url: serve.url },
    };
    for (const [how, target] of Object.entries(targets)) {
      const listed = await inspector(target, ["--method", "resources/list"], ws.home);
      const resources = (listed.json?.resources ?? []) as { uri: string }[];
      assert(resources.length > 0, `${how}: ${listed.out}`);
      assert(resources.every((r) => r.uri.includes("://everything/")), listed.out);
      const read = await inspector(
        target,
        ["--method", "resources/read", "--uri", resources[0].uri],
        ws.home,
      );
      const contents = (read.json?.contents ?? []) as { uri: string }[];
      assertEquals(contents[0]?.uri, resources[0].uri, `${how}: ${read.out}`);
      const prompts = await inspector(target, ["--method", "prompts/list"], ws.home);
      const names = ((prompts.json?.prompts ?? []) as { name: string }[]).map((p) => p.name);
      assert(names.includes("everything__args-prompt"), `${how}: ${prompts.out}`);
      const got = await inspector(target, [
        "--method",
        "prompts/get",
        // A trailing variadic option would swallow the target (inspector_test.ts).
        "--prompt-args",
        "city=Lyon",
        "--prompt-name",
        "everything__args-prompt",
      ], ws.home);
      assert(JSON.stringify(got.json?.messages ?? "").includes("Lyon"), `${how}: ${got.out}`);
    }
  } finally {
    await http.close();
  }
});
