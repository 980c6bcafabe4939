/**
 * Size of the published form of `@casys/pml` (what `deno task size` prints: the npm package as
 * `npm pack` makes it), and of the bundled code alone (`deno task bundle`: `pml.js` and the sandbox
 * entries, minified, npm packages external) as a gzipped tarball, as figures of the summary table.
 *
 *   deno task bench size
 */
import { join } from "node:path";
import { bundle } from "../packages/pml/scripts/bundle.ts";
import { publishedSize } from "../packages/pml/scripts/size.ts";
import { figure } from "./_stats.ts";

const size = await publishedSize();
const kib = size.gzBytes / 1024;
console.log(
  `@casys/pml (npm pack): ${size.files} files, ${(size.rawBytes / 1024).toFixed(1)} KiB unpacked, ${
    kib.toFixed(1)
  } KiB packed`,
);
figure({
  id: "3-size",
  what: "published client package, `npm pack` of `@casys/pml` (`deno task size`)",
  now: `${kib.toFixed(1)} KiB (${size.files} files)`,
  target: "< 50 KB",
  met: size.gzBytes < 50_000,
  bench: "size",
});

const pkg = join(import.meta.dirname!, "..", "packages", "pml");
const out = Deno.makeTempDirSync({ dir: pkg, prefix: ".bundle-size-" });
try {
  await bundle(out);
  const tar = await new Deno.Command("tar", { args: ["-czf", "-", "."], cwd: out, stdout: "piped" })
    .output();
  const gz = tar.stdout.length;
  const js = Deno.statSync(join(out, "pml.js")).size;
  console.log(
    `bundled form: pml.js ${(js / 1024).toFixed(1)} KiB + sandbox entries, ${
      (gz / 1024).toFixed(1)
    } KiB gzipped`,
  );
  figure({
    id: "3b-bundle",
    what: "bundled client (`deno task bundle`: `pml.js` + sandbox entries), gzipped",
    now: `${(gz / 1024).toFixed(1)} KiB`,
    target: "< 50 KB",
    met: gz < 50_000,
    bench: "size",
  });
} finally {
  Deno.removeSync(out, { recursive: true });
}
