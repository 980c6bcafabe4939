import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../testing/assert.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import { HOME_SECRETS } from "./host_view.ts";
import { sandboxPolicy } from "./policy.ts";
import { sandboxExecArgs, seatbeltProfile } from "./seatbelt.ts";

/** A home holding every secret of the deny list, and a workspace with protected files. */
function machine(ws: { home: string; dir: string; write(rel: string, text: string): string }) {
  for (const rel of HOME_SECRETS) {
    const path = join(ws.home, rel);
    Deno.mkdirSync(join(path, ".."), { recursive: true });
    if (rel.includes(".") && !rel.endsWith(".pml")) Deno.writeTextFileSync(path, "secret");
    else Deno.mkdirSync(path, { recursive: true });
  }
  ws.write(".git/config", "[core]\n");
  ws.write(".pml.json", "{}");
}

/** The index of the last line starting with `prefix`. */
const last = (lines: string[], prefix: string) => lines.findLastIndex((l) => l.startsWith(prefix));

Deno.test("seatbelt: deny by default, each secret denied after every allow, writes only to the grants", async () => {
  await using ws = tempWorkspace();
  machine(ws);
  const policy = sandboxPolicy({
    view: "toolbox",
    env: { HOME: ws.home, PATH: "/usr/bin:/bin" },
    write: [ws.dir],
    denyWrite: [join(ws.dir, ".git/config"), join(ws.dir, ".pml.json")],
  });
  const profile = seatbeltProfile(policy, { tmp: "/private/tmp/pml-1", deno: "/opt/deno" });
  const lines = profile.split("\n");
  assertEquals(lines.slice(0, 2), ["(version 1)", "(deny default)"]);
  // Every secret of the deny list that exists is in the deny rule, which comes after the allows.
  const deny = lines.indexOf("(deny file-read* file-write*");
  assert(deny > last(lines, "(allow file-read*") && deny > last(lines, "(allow file-write*"));
  const denied = lines.slice(deny + 1, lines.indexOf(")", deny));
  for (const rel of HOME_SECRETS) {
    assert(denied.includes(`  (subpath "${join(ws.home, rel)}")`), `${rel} is not denied`);
  }
  // Writes: the workspace and the private temporary folder, nothing else.
  const w = lines.indexOf("(allow file-write*");
  assertEquals(lines.slice(w + 1, lines.indexOf(")", w)), [
    `  (subpath "${ws.dir}")`,
    '  (subpath "/private/tmp/pml-1")',
  ]);
  // Protected files: no write, after the write grant.
  const locked = lines.indexOf("(deny file-write*");
  assert(locked > w);
  assertStringIncludes(profile, `(subpath "${join(ws.dir, ".git/config")}")`);
  assertStringIncludes(profile, `(subpath "${join(ws.dir, ".pml.json")}")`);
  // The home is readable (toolchains, ~/.gitconfig); no network rule at all without grants.
  const r = lines.indexOf("(allow file-read*");
  assert(lines.slice(r, lines.indexOf(")", r)).includes(`  (subpath "${ws.home}")`));
  assert(!profile.includes("network"), profile);
});

Deno.test("seatbelt: network only to the proxy's two loopback ports; quotes in paths are escaped", () => {
  const policy = sandboxPolicy({
    view: "narrow",
    env: {},
    read: ['/ws/a "quoted" \\ path'],
    net: ["127.0.0.1:8080"],
  });
  const profile = seatbeltProfile(policy, { tmp: "/t", deno: "/d" });
  const network = profile.split("\n").filter((l) => l.includes("network"));
  assertEquals(network, [
    '(allow network-outbound (remote tcp (string-append "localhost:" (param "PML_PROXY_HTTP_PORT"))))',
    '(allow network-outbound (remote tcp (string-append "localhost:" (param "PML_PROXY_SOCKS_PORT"))))',
  ]);
  // The granted host itself is not reachable directly: only through the proxy.
  assert(!profile.includes("8080"));
  assertStringIncludes(profile, '(subpath "/ws/a \\"quoted\\" \\\\ path")');
  assertEquals(sandboxExecArgs(profile, ["sh", "-c", "x"], [40001, 40002]).slice(0, 6), [
    "/usr/bin/sandbox-exec",
    "-D",
    "PML_PROXY_HTTP_PORT=40001",
    "-D",
    "PML_PROXY_SOCKS_PORT=40002",
    "-p",
  ]);
  assertEquals(sandboxExecArgs(profile, ["sh"]).slice(0, 2), ["/usr/bin/sandbox-exec", "-p"]);
});

Deno.test("seatbelt: a path reached through a symlink is named as its real path too; folders of guarded files are pinned", async () => {
  await using ws = tempWorkspace();
  ws.write(".git/config", "[core]\n");
  const link = join(ws.root, "ws-link");
  Deno.symlinkSync(ws.dir, link);
  const policy = sandboxPolicy({
    view: "narrow",
    env: {},
    write: [link],
    denyWrite: [join(link, ".git/config")],
  });
  const profile = seatbeltProfile(policy, { tmp: "/t", deno: "/d" });
  const lines = profile.split("\n");
  const w = lines.indexOf("(allow file-write*");
  const writes = lines.slice(w + 1, lines.indexOf(")", w));
  assert(writes.includes(`  (subpath "${link}")`) && writes.includes(`  (subpath "${ws.dir}")`));
  // A guarded file that does not exist yet is denied all the same (it cannot be created).
  assertStringIncludes(profile, `(subpath "${join(link, ".bashrc")}")`);
  // `.git` and the workspace cannot be renamed away, under either spelling.
  const pin = lines.indexOf("(deny file-write-unlink");
  assert(pin > w);
  const pinned = lines.slice(pin + 1, lines.indexOf(")", pin));
  for (const dir of [join(link, ".git"), link, join(ws.dir, ".git"), ws.dir]) {
    assert(pinned.includes(`  (literal "${dir}")`), `${dir} is not pinned`);
  }
});
