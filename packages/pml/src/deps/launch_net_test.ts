import { join } from "node:path";
import { assert, assertEquals } from "../testing/assert.ts";
import { tempWorkspace } from "../testing/workspace.ts";
import { loadConfig } from "../config/config.ts";
import { PrivateMcpSource } from "./sources.ts";
import { withNetGrants } from "./grants.ts";
import { commandLaunch } from "./command_launch.ts";
import { denoLaunch } from "./launch.ts";
import type { DependencyMeta } from "./metadata.ts";
import { PROGRAM_LIMITS } from "../sandbox/limits.ts";

const BWRAP = { available: true, bwrap: "/usr/bin/bwrap" } as const;

Deno.test("launch: an npm server with sandbox.net reaches its hosts through the proxy only (no shared network)", async () => {
  const entry = JSON.parse(
    Deno.readTextFileSync(join(import.meta.dirname!, "../../../../registry/mcp/memory.json")),
  );
  await using ws = tempWorkspace({ private_mcps: { mem: entry } });
  const c = loadConfig({ env: { PML_WORKSPACE: ws.dir }, cwd: ws.dir, home: ws.home });
  const meta = withNetGrants((await new PrivateMcpSource(c.privateMcps).get("mem"))!, [
    "127.0.0.1:8080",
  ]);
  const spec = denoLaunch(meta, {
    dir: "/deps/mem",
    packageDir: "/deps/mem/node_modules/pkg",
    integrity: meta.package!.integrity!,
    bin: "/deps/mem/node_modules/pkg/dist/index.js",
  }, {
    workspace: ws.dir,
    denoPath: "/opt/deno/deno",
    denoDir: "/cache",
    env: {},
    osSandbox: BWRAP,
  });
  assertEquals(spec.netProxy?.grants, ["127.0.0.1:8080"]);
  assert(!spec.args.includes("--share-net"), "the host's network is never shared");
  assert(spec.args.join(" ").includes(`--ro-bind ${spec.netProxy!.dir} /run/pml-net`));
  assert(spec.args.includes("--allow-net=127.0.0.1:8080"), "Deno's flag stays a second wall");
  assertEquals(spec.env.HTTPS_PROXY, "http://127.0.0.1:3128");
  // Deno's fetch would ask for --allow-net to the SOCKS port: no ALL_PROXY for Deno code.
  assertEquals(spec.env.ALL_PROXY, undefined);
  assertEquals(spec.group, { tasks: PROGRAM_LIMITS.tasks, memoryMb: PROGRAM_LIMITS.memoryMb });
});

Deno.test("launch: a raw command gets HTTP and SOCKS5 proxy variables, and no proxy without grants", async () => {
  await using ws = tempWorkspace();
  const base: DependencyMeta = {
    server: "raw",
    fqdn: "raw",
    description: "a raw command",
    command: "node",
    args: ["x.cjs"],
    envRequired: [],
    permissions: { read: [], write: [], net: [], env: [] },
    tools: [],
    allowedToolPatterns: [],
    source: "private_mcps",
  };
  const ctx = {
    workspace: ws.dir,
    env: { PATH: "/usr/bin:/bin" },
    depsDir: ws.root,
    osSandbox: BWRAP,
  };
  const none = commandLaunch(base, ctx);
  assertEquals(none.netProxy, undefined);
  assertEquals(none.env.HTTP_PROXY, undefined);
  const meta = { ...base, permissions: { ...base.permissions, net: ["registry.test"] } };
  const granted = commandLaunch(meta, ctx);
  assertEquals(granted.netProxy?.grants, ["registry.test"]);
  assertEquals(granted.env.ALL_PROXY, "socks5h://127.0.0.1:1080");
  assertEquals(granted.env.http_proxy, "http://127.0.0.1:3128");
});
