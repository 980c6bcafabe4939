/**
 * The official MCP conformance suite's client authorization scenarios (`client --scenario auth/…`
 * of the pinned `@modelcontextprotocol/conformance`) with PML as the client: the suite starts a
 * scenario's servers and runs `oauth_conformance_client.ts` with the server's URL, which puts it
 * behind a spawned `pml stdio` and plays the agent and the human (it opens the sign-in link `pml`
 * printed). Every applicable scenario must pass every check; the ones left out, and why, are in
 * docs/conformance.md ("Client authorization").
 */
import { isAbsolute, join, relative } from "node:path";
import { assertEquals } from "../../packages/pml/src/testing/assert.ts";

const REPO = join(import.meta.dirname!, "..", "..");
const SUITE = join(REPO, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
/**
 * The suite takes the client as one command line and splits it on spaces, so it names the Deno
 * binary and the adapter relative to the repository (the suite runs there): a checkout whose path
 * holds a space would otherwise be cut in two.
 */
const CLIENT = [
  inRepo(Deno.execPath()),
  "run",
  "-A",
  inRepo(join(import.meta.dirname!, "oauth_conformance_client.ts")),
].join(" ");

/** `path` relative to the repository when it lies inside it (`./…`), as it is otherwise. */
function inRepo(path: string): string {
  const rel = relative(REPO, path);
  return rel.startsWith("..") || isAbsolute(rel) ? path : `./${rel}`;
}

/** Every `auth/…` client scenario of the suite but the three of docs/conformance.md. */
export const APPLICABLE = [
  "metadata-default",
  "metadata-var1",
  "metadata-var2",
  "metadata-var3",
  "basic-cimd",
  "scope-from-www-authenticate",
  "scope-from-scopes-supported",
  "scope-omitted-when-undefined",
  "scope-step-up",
  "scope-retry-limit",
  "token-endpoint-auth-basic",
  "token-endpoint-auth-post",
  "token-endpoint-auth-none",
  "pre-registration",
  "2025-03-26-oauth-metadata-backcompat",
  "2025-03-26-oauth-endpoint-fallback",
  "resource-mismatch",
  "offline-access-scope",
  "offline-access-not-supported",
];

interface Check {
  readonly id: string;
  readonly status: string;
  readonly description?: string;
}

Deno.test("MCP conformance suite, client authorization: every applicable auth/ scenario passes with PML as the client", async () => {
  const out = await Deno.makeTempDir({ prefix: "pml-conformance-auth-" });
  const failures: string[] = [];
  try {
    for (const scenario of APPLICABLE) {
      const dir = join(out, scenario);
      const run = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          SUITE,
          "client",
          "--command",
          CLIENT,
          "--scenario",
          `auth/${scenario}`,
          "--timeout",
          "90000",
          "-o",
          dir,
        ],
        cwd: REPO,
        stdout: "piped",
        stderr: "piped",
      }).output();
      const files = [...Deno.readDirSync(join(dir, "auth"))];
      if (files.length === 0) {
        failures.push(
          `${scenario}: no result (${new TextDecoder().decode(run.stderr).slice(-300)})`,
        );
        continue;
      }
      const result = join(dir, "auth", files[0].name);
      const checks: Check[] = JSON.parse(Deno.readTextFileSync(join(result, "checks.json")));
      if (checks.length === 0) failures.push(`${scenario}: no checks`);
      for (const c of checks) {
        // INFO is the suite's own "may" (offline_access, a metadata document not fetchable here).
        if (c.status !== "SUCCESS" && c.status !== "INFO") {
          failures.push(`${scenario}/${c.id}: ${c.status} ${c.description ?? ""}`);
        }
      }
      console.error(`auth/${scenario}: ${checks.length} checks`);
    }
  } finally {
    await Deno.remove(out, { recursive: true }).catch(() => {});
  }
  assertEquals(failures, []);
});
