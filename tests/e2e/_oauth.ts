/** Helpers for the sign-in tests: the OAuth-protected fixture server, and a human who signs in. */
import { join } from "node:path";
import { waitForLine } from "../../packages/pml/src/testing/wait_for_line.ts";
import { PML_BIN, pmlEnv } from "./_spawn.ts";

const FIXTURE = join(import.meta.dirname!, "..", "fixtures", "oauth_server.mjs");

/** `tests/fixtures/oauth_server.mjs` running, with one MCP endpoint per name of `resources`. */
export async function startOAuthServer(resources: readonly string[] = ["mcp"]) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", FIXTURE],
    env: { RESOURCES: resources.join(","), PATH: Deno.env.get("PATH") ?? "" },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const { match, rest } = await waitForLine(child.stdout, /^OAUTH_SERVER (\S+)$/m, "oauth server");
  const base = match[1];
  return {
    base,
    url: (name = resources[0]) => `${base}/${name}`,
    /** Ends every access token (their refresh tokens stay good). */
    expire: async () => await (await fetch(`${base}/test/expire`, { method: "POST" })).json(),
    /** The `Authorization` headers each path received, and the tokens revoked. */
    seen: async (): Promise<
      { seen: { path: string; authorization: string }[]; revoked: string[] }
    > => await (await fetch(`${base}/test/seen`)).json(),
    async [Symbol.asyncDispose]() {
      child.kill("SIGKILL");
      await child.status;
      await rest;
    },
  };
}

/** The last sign-in link in `text` (what pml printed for the human). */
export function lastLink(text: string): string | undefined {
  const links = [...text.matchAll(/^\s+(https?:\/\/\S+\/authorize\?\S+)$/gm)].map((m) => m[1]);
  return links.at(-1);
}

/**
 * The human opens `link` in a browser: the authorization server approves at once (the SDK's demo
 * provider) and redirects to pml's loopback page, which exchanges the code. Returns that page.
 */
export async function openLink(link: string): Promise<{ status: number; text: string }> {
  const res = await fetch(link);
  return { status: res.status, text: await res.text() };
}

/**
 * `pml auth NAME --no-browser` in the workspace, the human opening the link it prints; resolves
 * with its exit code and output.
 */
export async function signInWithCli(ws: { dir: string; home: string }, name: string) {
  const child = new Deno.Command(PML_BIN, {
    args: ["auth", name, "--no-browser"],
    cwd: ws.dir,
    env: pmlEnv(ws),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const { match, printed, rest } = await waitForLine(
    child.stdout,
    /^\s+(https?:\/\/\S+\/authorize\?\S+)$/m,
    "pml auth",
  );
  const page = await openLink(match[1]);
  const [status, tail, err] = await Promise.all([
    child.status,
    rest,
    new Response(child.stderr).text(),
  ]);
  return { code: status.code, text: printed + tail + err, page, link: match[1] };
}
