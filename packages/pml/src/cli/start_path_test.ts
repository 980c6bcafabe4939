/**
 * What `pml stdio` loads before it can answer: the modules `main.ts` imports statically (Deno's own
 * module graph, `deno info --json`), and those the npm package's bundle `pml.js` imports
 * statically. Modules that only other commands or a later call need are imported when they are
 * used (docs/speed.md, "Cold start"); each still has to be reachable through a dynamic import, or
 * the command that needs it would fail.
 */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { bundle } from "../../scripts/bundle.ts";
import { assert, assertEquals } from "../testing/assert.ts";

const ROOT = join(import.meta.dirname!, "..", "..", "..", "..");

interface Graph {
  readonly roots: readonly string[];
  readonly modules: readonly {
    readonly specifier: string;
    readonly dependencies?: readonly {
      readonly specifier: string;
      readonly isDynamic?: boolean;
      readonly code?: { readonly specifier?: string };
    }[];
  }[];
}

/** The modules reachable from `entry` through static imports, and those only through `import()`. */
async function moduleGraph(entry: string): Promise<{ statics: string[]; dynamics: string[] }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", "--config", join(ROOT, "deno.json"), entry],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert(out.success, new TextDecoder().decode(out.stderr));
  const graph = JSON.parse(new TextDecoder().decode(out.stdout)) as Graph;
  const bySpecifier = new Map(graph.modules.map((m) => [m.specifier, m]));
  const reach = (roots: string[], dynamic: boolean) => {
    const seen = new Set<string>();
    const todo = [...roots];
    while (todo.length) {
      const at = todo.pop()!;
      if (seen.has(at)) continue;
      seen.add(at);
      for (const dep of bySpecifier.get(at)?.dependencies ?? []) {
        if (dep.isDynamic && !dynamic) continue;
        // A type-only import (`typeof import("node:crypto")`) has no code: nothing loads.
        if (dep.code?.specifier) todo.push(dep.code.specifier);
      }
    }
    return seen;
  };
  const statics = reach([...graph.roots], false);
  const all = reach([...statics], true);
  // A file URL encodes what a path does not (a clone in "my projects/" is "my%20projects/").
  const relative = (s: string) => s.replace(`${pathToFileURL(ROOT).href}/`, "");
  return {
    statics: [...statics].map(relative),
    dynamics: [...all].filter((s) => !statics.has(s)).map(relative),
  };
}

/** Modules `pml stdio` does not wait for, by the part of the path they name. */
const LATER = [
  "packages/pml/src/cli/init.ts", // the other commands
  "packages/pml/src/cli/import.ts",
  "packages/pml/src/cli/serve.ts",
  "packages/pml/src/cli/status.ts",
  "packages/pml/src/cli/approvals.ts",
  "packages/pml/src/cli/approvals_open.ts",
  "packages/pml/src/cli/trust.ts",
  "packages/pml/src/ingress/http.ts", // `pml serve`'s HTTP server
  "node_modules/smol-toml/", // `pml import`'s TOML parser
  "packages/pml/src/analysis/analyze.ts", // the first `pml:execute`
  "node_modules/@babel/parser/", // the first analysis of code
  "node_modules/@modelcontextprotocol/sdk/dist/esm/client/streamableHttp.js", // a cloud or remote
  "node_modules/@modelcontextprotocol/sdk/dist/esm/client/sse.js", // a remote server over SSE
  "node_modules/@modelcontextprotocol/sdk/dist/esm/server/webStandardStreamableHttp.js", // serve
  "node_modules/@modelcontextprotocol/sdk/dist/esm/server/requestBody.js",
];

/**
 * Deno's Node modules `pml stdio` must not load before its first answer. Those that a later call
 * needs are `require`d (not imported) on first use, so no graph holds them: only their absence from
 * the start is checked. `node:crypto` (~4–7 ms): `.pml.json`'s trust check hashes with Web Crypto
 * (`config.ts`, `loadConfigAsync`); `sha256.ts` requires it for synchronous hashes.
 */
const NOT_AT_START = ["node:crypto"];

Deno.test("pml stdio's start: the other commands, HTTP clients and parsers load when used", async () => {
  const { statics, dynamics } = await moduleGraph(join(ROOT, "packages", "pml", "main.ts"));
  // The walk sees the gateway the stdio path builds (a graph read wrong would pass vacuously).
  for (
    const needed of ["packages/pml/src/gateway/create_gateway.ts", "packages/pml/src/cli/run.ts"]
  ) {
    assert(statics.includes(needed), `${needed} is not in the static graph: ${statics.length}`);
  }
  const early = [...LATER, ...NOT_AT_START].filter((part) => statics.some((s) => s.includes(part)));
  assertEquals(early, [], "loaded before pml stdio's first answer");
  const unreachable = LATER.filter((part) => !dynamics.some((s) => s.includes(part)));
  assertEquals(unreachable, [], "no longer imported at all");
  // dotenv is CommonJS, required on the first `.env` read (config/dotenv.ts), not imported.
  assert(!statics.some((s) => s.includes("node_modules/dotenv/")), "dotenv is imported at start");
});

Deno.test("the npm package's pml.js: the npm modules of other commands and later calls load when used", async () => {
  // `deno bundle` inlines every local module eagerly (a local `import()` too): an npm module that
  // a lazily imported local module imports statically becomes a static import of the bundle.
  const out = Deno.makeTempDirSync({
    dir: join(ROOT, "packages", "pml"),
    prefix: ".bundle-start-",
  });
  try {
    await bundle(out);
    const { statics, dynamics } = await moduleGraph(join(out, "pml.js"));
    const sdkServer = "node_modules/@modelcontextprotocol/sdk/dist/esm/server/index.js";
    assert(statics.some((s) => s.includes(sdkServer)), `${sdkServer} not in the graph: ${statics}`);
    const npm = LATER.filter((part) => part.startsWith("node_modules/"));
    const early = [...npm, ...NOT_AT_START].filter((part) => statics.some((s) => s.includes(part)));
    assertEquals(early, [], "imported by pml.js before pml stdio's first answer");
    const unreachable = npm.filter((part) => !dynamics.some((s) => s.includes(part)));
    assertEquals(unreachable, [], "no longer imported by pml.js at all");
  } finally {
    Deno.removeSync(out, { recursive: true });
  }
});
