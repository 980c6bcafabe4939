/**
 * Size of the published form of `@casys/pml` (what `deno task size` prints), as a figure of the
 * summary table. Also what a minified `deno bundle` of the client's entry (npm packages external)
 * weighs gzipped: the candidate published form, not yet shipped (see docs/speed.md).
 *
 *   deno task bench size
 */
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { publishedSize } from "../packages/pml/scripts/size.ts";
import { figure } from "./_stats.ts";

const size = await publishedSize();
const kib = size.gzBytes / 1024;
console.log(
  `@casys/pml published form: ${size.files} files, ${(size.rawBytes / 1024).toFixed(1)} KiB raw, ${
    kib.toFixed(1)
  } KiB gzipped`,
);
figure({
  id: "3-size",
  what: "published client package, gzipped (`deno task size`)",
  now: `${kib.toFixed(1)} KiB (${size.files} files)`,
  target: "< 50 KB",
  met: size.gzBytes < 50_000,
  bench: "size",
});

// The candidate: `deno bundle` of packages/pml/main.ts, minified, with the npm packages external.
// The sandbox entries and std modules it spawns are separate files and are not counted here.
const out = Deno.makeTempDirSync({ prefix: "pml-bundle-" });
const bundle = await new Deno.Command(Deno.execPath(), {
  args: [
    "bundle",
    "--quiet",
    "--platform=deno",
    "--minify",
    "--packages=external",
    ...["@modelcontextprotocol/sdk/*", "zod", "@babel/parser", "npm:*"].map((e) =>
      `--external=${e}`
    ),
    "-o",
    join(out, "pml.js"),
    join(import.meta.dirname!, "..", "packages", "pml", "main.ts"),
  ],
  stdout: "null",
  stderr: "piped",
}).output();
if (bundle.success) {
  const js = Deno.readFileSync(join(out, "pml.js"));
  const gz = gzipSync(js, { level: 9 }).length;
  console.log(
    `deno bundle of main.ts (minified, npm external): ${(js.length / 1024).toFixed(1)} KiB, ${
      (gz / 1024).toFixed(1)
    } KiB gzipped`,
  );
  figure({
    id: "3b-bundle",
    what: "candidate bundled form: minified `deno bundle` of the client's `main.ts`, gzipped",
    now: `${(gz / 1024).toFixed(1)} KiB (sandbox entries and std modules not counted)`,
    target: "< 50 KB",
    met: gz < 50_000,
    bench: "size",
  });
} else {
  console.log(`deno bundle failed: ${new TextDecoder().decode(bundle.stderr)}`);
}
Deno.removeSync(out, { recursive: true });
