/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in the root
 * package.json) against the real `pml-server serve` on loopback. See `docs/conformance.md`.
 *
 * The suite cannot send headers and the endpoint requires an API key, so the suite talks to a
 * loopback proxy (in this test) that adds `Authorization: Bearer <key>` and forwards to the
 * server: the server runs unchanged, with authentication on.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { waitForLine } from "../../pml/src/testing/wait_for_line.ts";

const REPO = join(import.meta.dirname!, "../../..");
const LAUNCHER = join(REPO, "bin/pml-server");
const DENO = join(REPO, "node_modules/.bin/deno");
const SUITE = "npm:@modelcontextprotocol/conformance@0.1.16";

/** Scenarios that apply to the PML server; every check in them must pass. */
const APPLICABLE = ["server-initialize", "ping", "tools-list"];

/**
 * Checks that apply inside scenarios that otherwise do not (see docs/conformance.md): the
 * server answers requests whose Host and Origin are localhost.
 */
const APPLICABLE_CHECKS = ["LocalhostHostAccepted"];

/** Bound of the whole suite run. */
const SUITE_TIMEOUT_MS = 120_000;

interface Check {
  readonly name: string;
  readonly status: string;
  readonly errorMessage?: string;
}

async function run(args: string[], env: Record<string, string>) {
  const output = await new Deno.Command(LAUNCHER, { args, env, stdout: "piped", stderr: "piped" })
    .output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  return new TextDecoder().decode(output.stdout);
}

/** Starts `pml-server serve --port 0`; resolves with its base URL and a stopper. */
async function startServer(env: Record<string, string>) {
  const child = new Deno.Command(LAUNCHER, {
    args: ["serve", "--port", "0"],
    env,
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const { match, rest } = await waitForLine(
    child.stdout,
    /^pml-server listening on (http:\/\/127\.0\.0\.1:\d+\/)$/m,
    "pml-server serve",
  ).catch(async (err) => {
    child.kill("SIGKILL");
    await child.status;
    throw err;
  });
  return {
    base: match[1],
    stop: async () => {
      child.kill("SIGTERM");
      await child.status;
      await rest;
    },
  };
}

/** The checks of every scenario the suite wrote to `dir` (`<dir>/server-<scenario>-<time>/`). */
async function readResults(dir: string): Promise<Map<string, Check[]>> {
  const results = new Map<string, Check[]>();
  for await (const item of Deno.readDir(dir)) {
    const scenario = item.name.replace(/^server-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
    const checks = JSON.parse(await Deno.readTextFile(join(dir, item.name, "checks.json")));
    results.set(scenario, checks);
  }
  return results;
}

Deno.test("MCP conformance suite: the applicable scenarios pass against pml-server serve", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "pml-conformance-" });
  const outDir = join(dataDir, "results");
  const env = { PML_DATA_DIR: dataDir, PML_DATABASE_URL: "" };
  const key = (await run(["keys", "create", "--label", "conformance"], env)).split("\n")[0];
  const server = await startServer(env);
  const proxy = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
    const url = new URL(request.url);
    const headers = new Headers(request.headers);
    headers.set("authorization", `Bearer ${key}`);
    return fetch(new URL(url.pathname + url.search, server.base), {
      method: request.method,
      headers,
      body: request.body,
      redirect: "manual",
    });
  });
  try {
    const suite = new Deno.Command(DENO, {
      args: [
        "run",
        "-A",
        SUITE,
        "server",
        "--url",
        `http://127.0.0.1:${proxy.addr.port}/mcp`,
        "-o",
        outDir,
      ],
      cwd: REPO,
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(SUITE_TIMEOUT_MS),
    });
    const output = await suite.output();
    const log = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    const summary = log.slice(log.indexOf("=== SUMMARY ==="));
    console.log(summary.trim());
    const results = await readResults(outDir);
    const failures: string[] = [];
    for (const scenario of APPLICABLE) {
      const checks = results.get(scenario);
      if (!checks?.length) failures.push(`${scenario}: not run`);
      for (const check of checks ?? []) {
        if (check.status !== "SUCCESS") {
          failures.push(`${scenario}/${check.name}: ${check.status} ${check.errorMessage ?? ""}`);
        }
      }
    }
    const all = [...results.values()].flat();
    for (const name of APPLICABLE_CHECKS) {
      const check = all.find((c) => c.name === name);
      if (check?.status !== "SUCCESS") failures.push(`${name}: ${check?.status ?? "not run"}`);
    }
    assert.deepEqual(failures, [], summary);
  } finally {
    await proxy.shutdown();
    await server.stop();
    await Deno.remove(dataDir, { recursive: true });
  }
});
