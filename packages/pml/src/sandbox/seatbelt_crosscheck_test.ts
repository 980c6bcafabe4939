/**
 * PML's Seatbelt profile beside sandbox-runtime's (the pinned devDependency) for the same policy:
 * secrets denied for reading, the workspace (and a private temporary folder) writable, its
 * protected files not, the network only to a proxy's two loopback ports. Both profiles are parsed
 * into rules (`testing/sbpl.ts`) and asked the same questions; where the answers differ, the table
 * says why (docs/security.md, "Seatbelt", keeps the same list). Runs on any OS: nothing is run
 * under `sandbox-exec` here (the self-test does that on a Mac: `seatbelt_canary.ts`).
 */
import { join } from "node:path";
import { assertEquals } from "../testing/assert.ts";
import { sbplAllows, type SbplProbe, type SbplRule, sbplRules } from "../testing/sbpl.ts";
import { guardedPaths } from "../config/control_files.ts";
import { sandboxPolicy } from "./policy.ts";
import { seatbeltProfile } from "./seatbelt.ts";
import { wrapCommandWithSandboxMacOS } from "@anthropic-ai/sandbox-runtime/dist/sandbox/macos-sandbox-utils.js";

const HTTP_PORT = 40001;
const SOCKS_PORT = 40002;

/** The words of a command line quoted for a POSIX shell (bare words and `'…'` runs). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === " ") {
      if (word !== undefined) words.push(word);
      word = undefined;
    } else if (c === "'" || c === '"') {
      const end = line.indexOf(c, i + 1);
      word = (word ?? "") + line.slice(i + 1, end);
      i = end;
    } else word = (word ?? "") + c;
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** A home with secrets, a workspace with protected files, a folder outside, a private tmp. */
function scene() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "pml-crosscheck-" }));
  const home = join(root, "home");
  const ws = join(root, "ws");
  const tmp = join(root, "tmp");
  for (const dir of [join(home, ".ssh"), join(home, ".aws"), join(ws, ".git", "hooks"), tmp]) {
    Deno.mkdirSync(dir, { recursive: true });
  }
  Deno.writeTextFileSync(join(home, ".ssh", "id_ed25519"), "secret");
  Deno.writeTextFileSync(join(home, ".aws", "credentials"), "secret");
  Deno.writeTextFileSync(join(ws, ".git", "config"), "[core]\n");
  Deno.writeTextFileSync(join(ws, "notes.txt"), "notes");
  return { root, home, ws, tmp };
}

/** Both profiles' rules for the scene's policy. */
function profiles(s: ReturnType<typeof scene>): { ours: SbplRule[]; theirs: SbplRule[] } {
  const guarded = guardedPaths([s.ws]);
  const policy = sandboxPolicy({
    view: "toolbox",
    env: { HOME: s.home, PATH: "/usr/bin:/bin" },
    write: [s.ws],
    denyWrite: guarded,
    net: ["127.0.0.1:8080"],
  });
  const ours = seatbeltProfile(policy, { tmp: s.tmp, deno: "/opt/deno/bin/deno" });
  // sandbox-runtime finds its mandatory denies (`.git/hooks`, `.bashrc`, …) under the cwd.
  const cwd = Deno.cwd();
  Deno.chdir(s.ws);
  let wrapped: string;
  try {
    wrapped = wrapCommandWithSandboxMacOS({
      command: "true",
      needsNetworkRestriction: true,
      httpProxyPort: HTTP_PORT,
      socksProxyPort: SOCKS_PORT,
      readConfig: { denyOnly: [...policy.denyRead] },
      writeConfig: { allowOnly: [s.ws, s.tmp], denyWithinAllow: [...policy.denyWrite] },
    });
  } finally {
    Deno.chdir(cwd);
  }
  const words = shellWords(wrapped);
  const theirs = words[words.indexOf("-p") + 1];
  // The proxy's ports as `sandbox-exec -D` gives them.
  const params = { PML_PROXY_HTTP_PORT: `${HTTP_PORT}`, PML_PROXY_SOCKS_PORT: `${SOCKS_PORT}` };
  return { ours: sbplRules(ours, params), theirs: sbplRules(theirs) };
}

/** One question to both profiles: what each should answer, and why when they differ. */
interface Row {
  readonly what: string;
  readonly probe: SbplProbe;
  readonly ours: boolean;
  readonly theirs: boolean;
  readonly why?: string;
}

function rows(s: ReturnType<typeof scene>): Row[] {
  const file = (op: string, path: string, vnode?: "DIRECTORY" | "CHARACTER-DEVICE") => ({
    op,
    path,
    vnode,
  });
  const sysctl = (name: string) => ({ op: "sysctl-read" as const, sysctl: name });
  const tcp = (host: string, port: number) => ({
    op: "network-outbound" as const,
    remote: { proto: "tcp" as const, host, port },
  });
  return [
    // What both refuse.
    {
      what: "read a key under ~/.ssh",
      probe: file("file-read-data", join(s.home, ".ssh/id_ed25519")),
      ours: false,
      theirs: false,
    },
    {
      what: "read ~/.aws/credentials",
      probe: file("file-read-data", join(s.home, ".aws/credentials")),
      ours: false,
      theirs: false,
    },
    {
      what: "stat a key under ~/.ssh",
      probe: file("file-read-metadata", join(s.home, ".ssh/id_ed25519")),
      ours: false,
      theirs: false,
    },
    {
      what: "write a file outside the workspace",
      probe: file("file-write-data", join(s.root, "outside/x")),
      ours: false,
      theirs: false,
    },
    {
      what: "create a file in HOME",
      probe: file("file-write-create", join(s.home, "x")),
      ours: false,
      theirs: false,
    },
    {
      what: "write .git/config",
      probe: file("file-write-data", join(s.ws, ".git/config")),
      ours: false,
      theirs: false,
    },
    {
      what: "create a hook in .git/hooks",
      probe: file("file-write-create", join(s.ws, ".git/hooks/pre-commit")),
      ours: false,
      theirs: false,
    },
    {
      what: "create .bashrc in the workspace",
      probe: file("file-write-create", join(s.ws, ".bashrc")),
      ours: false,
      theirs: false,
    },
    {
      what: "create .vscode/tasks.json",
      probe: file("file-write-create", join(s.ws, ".vscode/tasks.json")),
      ours: false,
      theirs: false,
    },
    {
      what: "rename .git away (then change its config)",
      probe: file("file-write-unlink", join(s.ws, ".git"), "DIRECTORY"),
      ours: false,
      theirs: false,
    },
    {
      what: "write the user's terminal",
      probe: file("file-write-data", "/dev/tty"),
      ours: false,
      theirs: false,
    },
    {
      what: "TCP to the granted host directly",
      probe: tcp("127.0.0.1", 8080),
      ours: false,
      theirs: false,
    },
    {
      what: "TCP to another loopback port",
      probe: tcp("127.0.0.1", 5432),
      ours: false,
      theirs: false,
    },
    { what: "TCP to a remote host", probe: tcp("203.0.113.7", 443), ours: false, theirs: false },
    {
      what: "connect to the Docker socket",
      probe: { op: "network-outbound", unixSocket: "/var/run/docker.sock" },
      ours: false,
      theirs: false,
    },
    {
      what: "read another process's environment (sysctl kern.procargs2)",
      probe: sysctl("kern.procargs2"),
      ours: false,
      theirs: false,
    },
    // What both allow.
    {
      what: "read a workspace file",
      probe: file("file-read-data", join(s.ws, "notes.txt")),
      ours: true,
      theirs: true,
    },
    {
      what: "write a workspace file",
      probe: file("file-write-data", join(s.ws, "notes.txt")),
      ours: true,
      theirs: true,
    },
    {
      what: "create a workspace file",
      probe: file("file-write-create", join(s.ws, "new.txt")),
      ours: true,
      theirs: true,
    },
    {
      what: "remove a workspace file",
      probe: file("file-write-unlink", join(s.ws, "notes.txt")),
      ours: true,
      theirs: true,
    },
    {
      what: "write git's index",
      probe: file("file-write-data", join(s.ws, ".git/index")),
      ours: true,
      theirs: true,
    },
    {
      what: "write the private tmp",
      probe: file("file-write-create", join(s.tmp, "x")),
      ours: true,
      theirs: true,
    },
    {
      what: "read a system library",
      probe: file("file-read-data", "/usr/lib/libSystem.B.dylib"),
      ours: true,
      theirs: true,
    },
    {
      what: "read the home's .gitconfig",
      probe: file("file-read-data", join(s.home, ".gitconfig")),
      ours: true,
      theirs: true,
    },
    {
      what: "write /dev/null",
      probe: file("file-write-data", "/dev/null", "CHARACTER-DEVICE"),
      ours: true,
      theirs: true,
    },
    {
      what: "read the CPU count (sysctl hw.ncpu)",
      probe: sysctl("hw.ncpu"),
      ours: true,
      theirs: true,
    },
    {
      what: "read the OS release (sysctl kern.osrelease)",
      probe: sysctl("kern.osrelease"),
      ours: true,
      theirs: true,
    },
    { what: "start /bin/sh", probe: file("process-exec", "/bin/sh"), ours: true, theirs: true },
    {
      what: "TCP to the proxy (HTTP)",
      probe: tcp("127.0.0.1", HTTP_PORT),
      ours: true,
      theirs: true,
    },
    {
      what: "TCP to the proxy (SOCKS5)",
      probe: tcp("localhost", SOCKS_PORT),
      ours: true,
      theirs: true,
    },
    // Where they differ, on purpose.
    {
      what: "read another user's file",
      probe: file("file-read-data", "/Users/other/notes.txt"),
      ours: false,
      theirs: true,
      why:
        "PML's reads are an allow list (the toolbox: system, HOME, PATH); sandbox-runtime reads everything but its deny list",
    },
    {
      what: "read a file outside the toolbox",
      probe: file("file-read-data", "/private/var/root/notes"),
      ours: false,
      theirs: true,
      why: "same: allow list against deny list",
    },
    {
      what: "UDP to the proxy's port",
      probe: {
        op: "network-outbound",
        remote: { proto: "udp", host: "127.0.0.1", port: HTTP_PORT },
      },
      ours: false,
      theirs: true,
      why: "PML allows TCP to the proxy only (`remote tcp`); theirs is `remote ip`",
    },
    {
      what: "write .bashrc in a subfolder",
      probe: file("file-write-create", join(s.ws, "sub/.bashrc")),
      ours: true,
      theirs: false,
      why:
        "PML guards the files the host runs at each write root (and those its repository names), as on Linux; sandbox-runtime denies the names at any depth",
    },
    {
      what: "write a nested clone's .git/config",
      probe: file("file-write-data", join(s.ws, "vendor/lib/.git/config")),
      ours: true,
      theirs: false,
      why: "same: per write root and repository, not at any depth",
    },
  ];
}

Deno.test("seatbelt cross-check: PML's profile and sandbox-runtime's answer the same, except where documented", () => {
  const s = scene();
  try {
    const { ours, theirs } = profiles(s);
    const got = rows(s).map((r) => ({
      what: r.what,
      ours: sbplAllows(ours, r.probe),
      theirs: sbplAllows(theirs, r.probe),
    }));
    const want = rows(s).map(({ what, ours, theirs }) => ({ what, ours, theirs }));
    assertEquals(got, want);
  } finally {
    Deno.removeSync(s.root, { recursive: true });
  }
});

Deno.test("seatbelt cross-check: the reader parses both profiles whole and decides by the last rule", () => {
  const rules = sbplRules(
    `(version 1)\n(deny default (with message "t")) ; c\n` +
      `(allow file-read* (subpath "/a"))\n(deny file-read-data (regex #"^/a/s(/.*)?$"))\n`,
  );
  assertEquals(rules.length, 3);
  assertEquals(sbplAllows(rules, { op: "file-read-data", path: "/a/x" }), true);
  assertEquals(sbplAllows(rules, { op: "file-read-data", path: "/a/s/k" }), false);
  assertEquals(sbplAllows(rules, { op: "file-read-metadata", path: "/a/s/k" }), true);
  assertEquals(sbplAllows(rules, { op: "file-read-data", path: "/ab" }), false);
});

Deno.test("seatbelt cross-check: the reader computes parameters as sandbox-exec -D gives them", () => {
  const rules = sbplRules(
    '(deny default)\n(allow network-outbound (remote tcp (string-append "localhost:" (param "P"))))',
    { P: "7" },
  );
  const tcp = (port: number) => ({
    op: "network-outbound" as const,
    remote: { proto: "tcp" as const, host: "127.0.0.1", port },
  });
  assertEquals([sbplAllows(rules, tcp(7)), sbplAllows(rules, tcp(8))], [true, false]);
});
